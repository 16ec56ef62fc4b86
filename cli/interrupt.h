// Ctrl-C (SIGINT), SIGTERM and SIGHUP end a command with one line on stderr that says so and
// which of its outputs were written ("ovfix convert: interrupted; nothing written"), and
// with no temporary file left beside them; the exit code is 128 + the signal, as a shell
// reports a process the signal ended: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP.
// While a conversion measures the file it wrote, its own guard takes the written files back
// first and then hands the signal on (converter/take_back_on_interrupt.h). The handler calls
// only async-signal-safe functions (stat, unlink, write, _exit).
#pragma once

#include <string>
#include <vector>

namespace ovfix::cli {

// Installs the handler for `command` ("convert"). A signal the process was started ignoring
// (SIGHUP under nohup) stays ignored.
void HandleInterrupts(const std::string& command);

// The files the command is to write (empty paths are left out): an interrupt names those
// that are not as they were when this was called as written, the others as not written,
// and says "nothing written" when none is. Without this call the line says "interrupted".
void WatchOutputs(const std::vector<std::string>& paths);

}  // namespace ovfix::cli
