#include "distributed/DeferredRelease.h"

#include <mutex>
#include <vector>

namespace npusim::distributed {
namespace {

struct Queue {
  std::mutex mutex;
  std::vector<std::shared_ptr<void>> objects;
};

// Never destroyed: static destruction at exit must not release Python objects.
Queue& queue() {
  static Queue* instance = new Queue();
  return *instance;
}

}  // namespace

void releaseLaterErased(std::shared_ptr<void> object) {
  Queue& q = queue();
  std::lock_guard<std::mutex> lock(q.mutex);
  q.objects.push_back(std::move(object));
}

void releaseDeferred() {
  std::vector<std::shared_ptr<void>> released;
  {
    Queue& q = queue();
    std::lock_guard<std::mutex> lock(q.mutex);
    released.swap(q.objects);
  }
  // `released` goes out of scope here, outside the lock.
}

}  // namespace npusim::distributed
