// fork() while other threads use the runtime: the child never inherits a
// runtime lock held by a thread it does not have, and is a "bad fork".
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/Error.h"
#include "runtime/Runtime.h"

namespace npusim::runtime {
namespace {

TEST(RuntimeConcurrency, ForkWhileThreadsAllocateNeverDeadlocksTheChild) {
  Runtime& runtime = Runtime::instance();
  runtime.allocator(0);  // initialized in the parent: children are bad forks
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        void* block = runtime.allocator(0).allocate(4096 + 512 * (std::rand() % 8), 0);
        runtime.timeline(0).submit(0, 1000);
        runtime.allocator(0).free(block);
      }
    });
  }
  int hung = 0, wrong = 0;
  for (int i = 0; i < 40; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Takes the locks a child could touch; every device entry point refuses.
      const bool badFork = Runtime::inForkedChild();
      bool refused = false;
      try {
        runtime.allocator(0);
      } catch (const ForkedProcessError&) {
        refused = true;
      }
      (void)runtime.isDeviceInitialized(0);
      ::_exit(badFork && refused ? 0 : 1);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        wrong += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ++hung;
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  stop = true;
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(hung, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_FALSE(Runtime::inForkedChild());
}

}  // namespace
}  // namespace npusim::runtime
