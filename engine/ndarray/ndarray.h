// NDArray: an n-dimensional array on a device, computed asynchronously.
//
// An NDArray is a view (shape, dtype, byte offset) of a shared Chunk: the
// storage block and the engine variable that orders every read and write of
// it. Copying an NDArray copies the view, not the data. Reshape, Slice and At
// return views of the same chunk, so writes through a view are seen by the
// base array. Every operation is pushed to the engine and returns at once;
// WaitToRead/WaitToWrite and the Sync* copies are the synchronisation points.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/shape.h"
#include "engine/base/tblob.h"
#include "engine/scheduler/engine.h"
#include "engine/storage/storage.h"

namespace tessera {

namespace op {
struct Node;
}

using engine::VarHandle;

class NDArray {
 public:
  // The storage every view of one array shares.
  struct Chunk {
    Chunk(size_t bytes, Context ctx, bool delay_alloc);
    ~Chunk();
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;
    // Allocates on first need (delay_alloc arrays get memory when an op
    // first writes them, so shape inference can run before allocation).
    void CheckAndAlloc();
    // The engine variable that orders the chunk's reads and writes, made on
    // first need (thread-safe). An op's new output that is written at once
    // on the calling thread (Invoke's tiny ops) and dropped before anything
    // else used it never needs one.
    VarHandle var();
    // The variable if made, else null: then nothing is pending on the chunk.
    VarHandle var_if_made() const { return var_.load(std::memory_order_acquire); }

    storage::Handle handle;
    // Alias chunks: the chunk whose memory this one borrows (kept alive).
    std::shared_ptr<Chunk> owner;
    Context ctx;
    size_t bytes;

   private:
    std::atomic<VarHandle> var_{nullptr};
  };

  NDArray() = default;
  // A new array; its contents are undefined until written.
  NDArray(const Shape& shape, Context ctx, DType dtype = DType::kFloat32, bool delay_alloc = false);

  bool is_none() const { return ptr_ == nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Context ctx() const { return ptr_ ? ptr_->ctx : Context(); }
  int ndim() const { return shape_.ndim(); }
  int64_t Size() const { return shape_.Size(); }
  size_t byte_offset() const { return byte_offset_; }
  VarHandle var() const { return ptr_ ? ptr_->var() : nullptr; }
  const std::shared_ptr<Chunk>& chunk() const { return ptr_; }
  // True when both views use the same storage.
  bool SameChunk(const NDArray& other) const { return ptr_ && ptr_ == other.ptr_; }
  // True when this view spans its whole chunk: writing it replaces every
  // value the chunk holds. A write to a smaller view updates the chunk (the
  // rest keeps its values), so it reads the chunk's variable too (see the
  // engine's poison rule in engine/scheduler/engine_base.cc).
  bool CoversChunk() const {
    return ptr_ && byte_offset_ == 0 &&
           static_cast<size_t>(Size()) * DTypeSize(dtype_) == ptr_->bytes;
  }

  // The data as a TBlob, for kernels. Allocates a delay-alloc array. Reading
  // through it is only safe inside an op that has this array's variable.
  // Inline: it runs for every input and output of every call.
  TBlob data() const {
    TBlob blob;
    DataInto(&blob);
    return blob;
  }
  // data() written field by field into *blob, for the op-call path: a TBlob
  // built on the stack and then copied stalls on store forwarding (the
  // copy's wide loads span the temporary's narrower stores).
  void DataInto(TBlob* blob) const {
    TS_CHECK(ptr_) << "NDArray: the array is empty (none)";
    ptr_->CheckAndAlloc();
    blob->dptr_ = static_cast<char*>(ptr_->handle.dptr) + byte_offset_;
    blob->shape_ = shape_;
    blob->type_flag_ = dtype_;
    blob->ctx_ = ptr_->ctx;
  }

  // Views sharing memory.
  NDArray Reshape(const Shape& shape) const;  // same Size(); no special values
  // MXNet's reshape codes (0 copy, -1 infer, -2 rest, -3 merge two, -4 split).
  NDArray Reshape(const std::vector<int64_t>& spec, bool reverse = false) const;
  NDArray Slice(int64_t begin, int64_t end) const;  // first axis, [begin, end)
  NDArray At(int64_t index) const;                  // first axis; drops it (1-D: shape (1))
  // The chunk's memory from this view's offset seen with another shape and
  // dtype (the executor's planned blocks hold values of any type); an error
  // when it does not fit in the chunk.
  NDArray AsView(const Shape& shape, DType dtype) const;
  // The same memory under an engine variable of its own. Code running inside
  // an op that holds this array's variable pushes work on an alias (pushing
  // on the array itself would queue behind the op) and settles the alias's
  // variable before the op ends. The memory lives while the alias does.
  NDArray Alias() const;

  // Synchronisation: wait until every write (read: and every read) pushed
  // before has finished; rethrows the error of a failed op that wrote it.
  void WaitToRead() const;
  void WaitToWrite() const;

  // A new array on ctx with the same values (pushed).
  NDArray CopyTo(Context ctx) const;
  // A new array of another dtype (pushed; values converted as C++ casts).
  NDArray AsType(DType dtype) const;
  // Copies `count` elements of this dtype from host memory, then returns.
  void SyncCopyFromCPU(const void* data, size_t count) const;
  // Waits for the array, then copies `count` elements into host memory.
  void SyncCopyToCPU(void* data, size_t count) const;
  // Every element, converted to double, after waiting (tests, printing).
  std::vector<double> ToVector() const;

  // "[NDArray float32 2x3 @cpu(0)]".
  std::string Footer() const;

  // Autograd: the recorded node that computed this array (or the variable
  // node attach_grad made for it) and which of its outputs this is. Views
  // and copies start without one; `Detach` drops it.
  const std::shared_ptr<op::Node>& ag_node() const { return ag_node_; }
  uint32_t ag_index() const { return ag_index_; }
  void set_ag_entry(std::shared_ptr<op::Node> node, uint32_t index) {
    ag_node_ = std::move(node);
    ag_index_ = index;
  }
  NDArray Detach() const {
    NDArray a = *this;
    a.ag_node_.reset();
    return a;
  }

 private:
  std::shared_ptr<Chunk> ptr_;
  Shape shape_;
  size_t byte_offset_ = 0;
  DType dtype_ = DType::kFloat32;
  std::shared_ptr<op::Node> ag_node_;
  uint32_t ag_index_ = 0;
};

// Pushes a copy of `from` into `to` (same shape and dtype; any contexts).
void CopyFromTo(const NDArray& from, const NDArray& to, int priority = 0);

}  // namespace tessera
