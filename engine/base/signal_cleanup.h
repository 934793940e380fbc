// Files to remove if a signal ends the process: the temporaries of saves in
// progress (atomic_file.h), which would otherwise stay behind, full-sized,
// beside their targets.
//
//   const int slot = RegisterFileForSignalCleanup(tmp);   // before writing
//   ...                                                     // write, rename
//   UnregisterFileForSignalCleanup(slot);                  // after the rename
//
// The first registration installs a handler for SIGINT, SIGTERM and SIGHUP,
// each only where its action is still the default: it removes every file
// registered, then lets the signal end the process as the default action
// would (same exit status). A program's own handler (the shell's Ctrl-C) and
// an ignored signal (nohup) are left alone; such a program installs
// RemoveFilesThenDie where it would otherwise restore the default action.
//
// Signal safety: the handler only unlinks paths kept in fixed slots, claimed
// with atomic compare-and-swap, so it never reads a path that a thread is
// writing or reusing, and calls nothing but unlink, signal and raise.
#pragma once

#include <string>

namespace tessera {

// Registers `path`; returns its slot, or -1 when every slot is taken or the
// path is too long (the file is then simply not removed on a signal).
int RegisterFileForSignalCleanup(const std::string& path);
// Forgets the slot (no-op for -1). The file itself is left alone.
void UnregisterFileForSignalCleanup(int slot);

// A signal handler: removes every registered file, restores the default
// action of `sig` and raises it again.
void RemoveFilesThenDie(int sig);

}  // namespace tessera
