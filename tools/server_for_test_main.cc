// A stand-alone `oomguard serve` for the process tests and the load
// benchmark: the same RunServe the oomguard CLI dispatches to.
#include "tools/serve_command.h"

int main(int argc, char** argv) { return oomguard::RunServe(argc, argv); }
