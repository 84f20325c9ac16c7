// Which devices have an autograd device thread.
//
// PyTorch's autograd engine runs the backward of npu operators on one worker
// thread per device ("pt_autograd_<device>"), started on the first backward
// and detached. A worker drops its last reference to a finished graph task
// after the caller of backward() has already returned, and that graph task
// can own Python objects (the torch function modes active at backward(), such
// as `with torch.device("npu")`, and since PyTorch 2.13 the contextvars
// context that every Python backward() stashes in the thread-local state). If
// the interpreter is finalizing by then, the
// worker's Py_DECREF cannot take the GIL, CPython ends the thread with
// pthread_exit, and the forced unwind through a noexcept destructor calls
// std::terminate: "terminate called without an active exception" at exit.
// npusim therefore drains these workers before finalization (npusim.npu._shutdown);
// this file tells it which workers exist.
#pragma once

#include <cstdint>

namespace npusim::backend {

// Called by the device guard's setDevice: the engine's thread_init sets its
// device once, by name "pt_autograd_<device>", before it takes any task.
void noteDeviceThreadIfAutograd(int device) noexcept;

// Bit d set: the autograd worker of npu:d has started.
uint64_t autogradDeviceThreads() noexcept;

// Runs one scalar backward on npu:d for every started worker, from C++ with
// every Python-owned part of the thread-local state cleared, and with the GIL
// released. A worker takes the new task only after it dropped its previous
// graph task (taking the GIL, which is free while this waits); the new graph
// task owns no Python object, so dropping it later needs no GIL. Call from
// atexit, while the interpreter is whole. Errors are swallowed: the drain
// prevents an abort and must not cause one.
void drainAutogradDeviceThreads() noexcept;

}  // namespace npusim::backend
