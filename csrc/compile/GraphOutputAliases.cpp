// The outputs that torch.compile(mode="reduce-overhead") hands to the program from an NPUGraph.
//
// A replayed graph writes its results into the same static memory every time. As CUDA's (and
// torch_npu's) graph trees do, each run hands out fresh tensors over that memory, on storages
// of their own, so that once a later run has overwritten it those storages alone can be made to
// raise "accessing tensor output of NPUGraphs that has been overwritten by a subsequent run"
// on any access (through the output or any view of it), while the graph keeps its static
// outputs. An alias storage holds a reference to the static storage, so the memory stays valid
// for as long as a program holds an output, even after the graph itself is gone.
#include <ATen/core/Tensor.h>
#include <ATen/core/TensorBody.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace npusim::compile {
namespace {

void releaseOwner(void* owner) { delete static_cast<c10::Storage*>(owner); }

// A fixed-size storage of `source`'s size over `bytes`.
c10::Storage storageOver(c10::DataPtr bytes, const c10::Storage& source) {
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), source.sym_nbytes(),
                                                            std::move(bytes), /*allocator=*/nullptr,
                                                            /*resizable=*/false));
}

// A storage over the same bytes that keeps the static storage alive and frees nothing itself.
c10::Storage aliasStorage(const c10::Storage& source) {
  auto* owner = new c10::Storage(source);
  return storageOver(c10::DataPtr(owner->mutable_data(), owner, &releaseOwner, source.device()), source);
}

// A storage over the same bytes that owns nothing (see graphUnownedAliases).
c10::Storage unownedStorage(const c10::Storage& source) {
  return storageOver(c10::DataPtr(source.mutable_data(), source.device()), source);
}

// Tensors like `tensors` over new storages made by `makeStorage` from theirs: tensors that
// shared a storage share one new storage, so aliasing between them is what it was. Undefined
// tensors stay undefined.
std::vector<at::Tensor> onNewStorages(const std::vector<at::Tensor>& tensors,
                                      c10::Storage (*makeStorage)(const c10::Storage&)) {
  std::unordered_map<const c10::StorageImpl*, c10::Storage> storages;
  std::vector<at::Tensor> result;
  result.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined() || !tensor.has_storage()) {
      result.push_back(tensor);
      continue;
    }
    const c10::Storage& source = tensor.storage();
    auto [entry, inserted] = storages.try_emplace(source.unsafeGetStorageImpl());
    if (inserted) entry->second = makeStorage(source);
    auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(entry->second), tensor.key_set(), tensor.dtype());
    impl->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
    result.emplace_back(std::move(impl));
  }
  return result;
}

// Fresh tensors for a graph run's outputs, on storages that keep the static memory alive.
std::vector<at::Tensor> graphOutputAliases(const std::vector<at::Tensor>& outputs) {
  return onNewStorages(outputs, &aliasStorage);
}

// The tensor over the graph's static memory behind a handed-out output (the tensor itself when it
// is not one). A graph captured on such an input (a backward on its forward's saved outputs)
// must hold the static memory, not the program's alias, which a later generation invalidates.
at::Tensor graphOutputSource(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage()) return tensor;
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  auto* source = storage->_mutable_data_ptr_no_checks().cast_context<c10::Storage>(&releaseOwner);
  if (source == nullptr) return tensor;
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(*source), tensor.key_set(), tensor.dtype());
  impl->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
  return at::Tensor(std::move(impl));
}

// Tensors over the same bytes that own nothing: what a captured graph keeps of the memory its
// kernels use, so that its temporaries go back to the graph's pool when capture ends (as on the
// chip, where a graph holds addresses, not allocations). The pool keeps its segments while the
// graph uses it, so the bytes stay valid; a later capture into the same pool may reuse them.
std::vector<at::Tensor> graphUnownedAliases(const std::vector<at::Tensor>& tensors) {
  return onNewStorages(tensors, &unownedStorage);
}

TORCH_LIBRARY_FRAGMENT(npusim, m) {
  m.def("_graph_output_aliases(Tensor[] outputs) -> Tensor[]", &graphOutputAliases);
  m.def("_graph_unowned_aliases(Tensor[] tensors) -> Tensor[]", &graphUnownedAliases);
  m.def("_graph_output_source(Tensor tensor) -> Tensor", &graphOutputSource);
}

}  // namespace
}  // namespace npusim::compile

extern "C" {

// Makes every access to the data of a storage (given by its StorageImpl address, as
// torch.multiprocessing's StorageWeakRef holds it; the caller checks it is alive) raise
// RuntimeError(message). The memory is not the storage's to free: it stays with the graph.
void npusim_compile_invalidate_storage(std::uintptr_t storageImpl, const char* message) {
  auto* storage = reinterpret_cast<c10::StorageImpl*>(storageImpl);
  storage->release_data_and_set_meta_custom_data_ptr_error_msg_(std::string(message));
}

}  // extern "C"
