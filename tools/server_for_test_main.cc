// A stand-alone `oomguard serve` for the process tests and the load
// benchmark: the same RunServeCommand the oomguard CLI dispatches to.
#include "tools/serve_command.h"

int main(int argc, char** argv) { return oomguard::RunServeCommand(argc, argv); }
