// `oomguard serve`: runs the gRPC server until SIGTERM or SIGINT, then
// drains in-flight calls (--shutdown_grace) and exits 0.
#ifndef OOMGUARD_TOOLS_SERVE_COMMAND_H_
#define OOMGUARD_TOOLS_SERVE_COMMAND_H_

namespace oomguard {

// argv[0] is the command name ("serve"); the rest are its flags (see
// serve_flags.cc, or run with --help). Returns the process exit code: 0
// after a signal-initiated shutdown, 1 when the server cannot start, 2 for
// a bad command line.
int RunServeCommand(int argc, char** argv);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_SERVE_COMMAND_H_
