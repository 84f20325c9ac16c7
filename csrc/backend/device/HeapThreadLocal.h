// A per-thread object that lives on the heap, reached through one
// thread-local pointer.
//
// Why not a thread_local object: the backend's thread-local storage is kept
// to a few hundred bytes, so that the dynamic linker can place the library's
// whole TLS block in the static TLS area it keeps for libraries loaded with
// dlopen. The backend is compiled with TLS descriptors (-mtls-dialect=gnu2,
// csrc/backend/CMakeLists.txt): an access to a block in the static area is
// then two instructions, where a dynamic block costs a call to
// __tls_get_addr per access. One large table in thread-local storage (the
// price memo is 45 KB) would make the whole block dynamic. A thread_local
// object with a destructor also costs an initialization guard per access;
// the pointer here has none.
#pragma once

namespace npusim::backend {

// `Tag` tells apart two tables of the same type.
template <class T, class Tag = T>
class HeapThreadLocal {
 public:
  // This thread's object, made (value-initialized) on first use.
  static T& get() {
    T* object = current_;
    return object != nullptr ? *object : create();
  }
  // This thread's object, or nullptr if it has not been made.
  static T* peek() noexcept { return current_; }

 private:
  // Deletes the object when its thread ends. Both pointers are cleared first:
  // a destructor that runs later on the same thread (another thread-local's,
  // or the object's own) and asks for the table gets a fresh one from
  // create(), never the dead one (that late object is not freed: the thread
  // is ending).
  struct Owner {
    T* object = nullptr;
    ~Owner() {
      T* dying = object;
      object = nullptr;
      current_ = nullptr;
      delete dying;
    }
  };

  [[gnu::noinline]] static T& create() {
    thread_local Owner owner;
    if (owner.object == nullptr) owner.object = new T();
    current_ = owner.object;
    return *owner.object;
  }

  static inline thread_local T* current_ = nullptr;
};

}  // namespace npusim::backend
