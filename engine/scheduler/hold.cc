#include "engine/scheduler/hold.h"

#include <algorithm>
#include <atomic>

#include "engine/base/error.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {

constinit thread_local HoldEntry* hold_detail::tls_top = nullptr;

namespace {

using Entry = HoldEntry;
using hold_detail::tls_top;

// Serials unique in the process without a shared counter per hold: each
// thread takes a block of 2^32 once.
uint64_t NextSerial() {
  static std::atomic<uint64_t> next_block{1};
  thread_local uint64_t next = 0, end = 0;
  if (next == end) {
    next = next_block.fetch_add(1, std::memory_order_relaxed) << 32;
    end = next + (uint64_t{1} << 32);
  }
  return next++;
}

// A hold's serial, drawn the first time a mark or another thread needs it.
uint64_t SerialOf(Entry* h) {
  if (h->serial == 0) h->serial = NextSerial();
  return h->serial;
}

// The sorted lists and the name of a hold.
std::span<const VarHandle> ReadsOf(const Entry* h) {
  if (h->op) return h->op->vars.reads();
  return h->hold->reads;
}
std::span<const VarHandle> WritesOf(const Entry* h) {
  if (h->op) return h->op->vars.writes();
  return h->hold->writes;
}
const char* NameOf(const Entry* h) {
  return h->op ? h->op->name : h->hold->name.c_str();
}

bool Contains(std::span<const VarHandle> sorted, VarHandle v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

// The hold whose serial `mark` is, on this thread's list; null if none.
const Entry* HoldMarked(uint64_t mark) {
  if (mark == 0) return nullptr;
  for (const Entry* h = tls_top; h; h = h->outer)
    if (h->serial == mark) return h;
  return nullptr;
}

}  // namespace

HoldScope::HoldScope(HoldRef hold)
    : keep_(std::move(hold)), entry_{keep_->serial, nullptr, keep_.get(), tls_top} {
  TS_DCHECK(keep_->serial != 0);  // CurrentHold drew it
  tls_top = &entry_;
}

HoldRef CurrentHold() {
  if (!tls_top) return nullptr;
  Entry* h = tls_top;
  auto hold = std::make_shared<Hold>();
  hold->serial = SerialOf(h);
  const auto reads = ReadsOf(h), writes = WritesOf(h);
  hold->reads.assign(reads.begin(), reads.end());
  hold->writes.assign(writes.begin(), writes.end());
  hold->name = NameOf(h);
  return hold;
}

const char* HoldName(uint64_t serial) {
  const Entry* h = HoldMarked(serial);
  return h ? NameOf(h) : "unnamed";
}

uint64_t HoldAhead(std::span<const VarHandle> reads, std::span<const VarHandle> writes) {
  // The outermost hold the work must queue behind: it ends last, so its
  // marks stay matched for as long as any of the holds is there.
  Entry* ahead = nullptr;
  for (Entry* h = tls_top; h; h = h->outer) {
    const auto held_reads = ReadsOf(h), held_writes = WritesOf(h);
    bool behind = false;
    for (VarHandle v : reads) behind = behind || Contains(held_writes, v);
    for (VarHandle v : writes)
      behind = behind || Contains(held_writes, v) || Contains(held_reads, v);
    if (behind) ahead = h;
  }
  if (ahead) return SerialOf(ahead);
  uint64_t behind = 0;
  for (VarHandle v : reads)
    if (const Entry* h = HoldMarked(v->owed_write.load(std::memory_order_relaxed)))
      behind = h->serial;
  for (VarHandle v : writes) {
    if (const Entry* h = HoldMarked(v->owed_write.load(std::memory_order_relaxed)))
      behind = h->serial;
    if (const Entry* h = HoldMarked(v->owed_read.load(std::memory_order_relaxed)))
      behind = h->serial;
  }
  return behind;
}

void MarkIfBehindHold(std::span<const VarHandle> reads, std::span<const VarHandle> writes) {
  if (!tls_top) return;
  const uint64_t behind = HoldAhead(reads, writes);
  if (!behind) return;
  for (VarHandle v : writes) v->owed_write.store(behind, std::memory_order_relaxed);
  for (VarHandle v : reads) v->owed_read.store(behind, std::memory_order_relaxed);
}

void CheckWaitAgainstHolds(VarHandle var, bool for_write, const char* what) {
  for (const Entry* h = tls_top; h; h = h->outer) {
    TS_CHECK(!(Contains(WritesOf(h), var) || (for_write && Contains(ReadsOf(h), var))))
        << what << " inside engine op '" << NameOf(h)
        << "' on a variable that op uses would wait for the op itself";
  }
  const Entry* behind = HoldMarked(var->owed_write.load(std::memory_order_relaxed));
  if (!behind && for_write) behind = HoldMarked(var->owed_read.load(std::memory_order_relaxed));
  TS_CHECK(!behind) << what << " inside engine op '" << (behind ? NameOf(behind) : "")
                    << "' on the result of work pushed inside it that must wait for the op "
                       "would wait for the op itself";
}

}  // namespace tessera::engine
