#include "backend/layouts/StorageRedirect.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

namespace npusim::backend {
namespace {

// The deleter of a redirected DataPtr: releases the storage it points into.
void releaseSource(void* context) { c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(context)); }

}  // namespace

void redirectStorage(const at::Tensor& dst, const at::Tensor& src, int64_t byteOffset) {
  c10::StorageImpl* source = src.storage().unsafeGetStorageImpl();
  c10::StorageImpl* target = dst.storage().unsafeGetStorageImpl();
  const c10::Device device = target->device();
  auto* base = static_cast<char*>(source->mutable_data());
  if (base == nullptr) {
    // Estimate-only storages have no bytes: the redirected storage has none either.
    target->set_data_ptr_noswap(c10::DataPtr(nullptr, device));
    return;
  }
  c10::raw::intrusive_ptr::incref(source);
  target->set_data_ptr_noswap(c10::DataPtr(base + byteOffset, source, &releaseSource, device));
}

}  // namespace npusim::backend
