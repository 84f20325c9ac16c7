// Objects a communication thread must not release itself.
//
// Gloo runs collectives on its own work-loop threads, and the completion of an
// hccl Work (marking its Future complete, on such a thread) is what lets the
// caller's wait() return. The caller may then drop the user's tensors and the
// Work at once, so the last references to them would die on the Gloo thread.
// A tensor that Python has seen owns a Python object; releasing it needs the
// GIL, and during interpreter finalization CPython ends a thread that asks for
// the GIL with pthread_exit, which aborts the process ("terminate called
// without an active exception"; PyTorch 2.13's own ProcessGroupGloo shows this
// with CPU tensors). So a completion hands what it held to this queue; the
// queue is emptied by the next collective on a caller's thread and at exit
// while the interpreter is whole, and whatever arrives later is never freed.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace npusim::distributed {

void releaseLaterErased(std::shared_ptr<void> object);

template <class T>
void releaseLater(T&& object) {
  releaseLaterErased(std::make_shared<std::decay_t<T>>(std::forward<T>(object)));
}

// Releases what the queue holds, on the calling thread.
void releaseDeferred();

}  // namespace npusim::distributed
