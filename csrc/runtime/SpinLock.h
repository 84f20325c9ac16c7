// A lock for short critical sections on the per-operator hot path (the
// caching allocator's block tables, the L2 residency tables). Taking and
// releasing it uncontended is one atomic exchange and one store, where a
// pthread mutex costs a library call each way; every operator takes such a
// lock several times, so this is a measurable part of its host overhead.
// A waiter spins on a plain load and yields its time slice between tries, so
// a long critical section (an out-of-memory retry that synchronizes the
// device) makes other threads wait politely rather than burn a core.
// Satisfies BasicLockable (std::lock_guard, std::unique_lock).
#pragma once

#include <atomic>
#include <thread>

namespace npusim::runtime {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace npusim::runtime
