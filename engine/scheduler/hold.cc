#include "engine/scheduler/hold.h"

#include <algorithm>
#include <atomic>

#include "engine/base/error.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {
namespace {

// One hold on the calling thread's stack. The lists are an op's (alive while
// it runs) or a Hold's (kept by the scope).
struct Entry {
  uint64_t serial;
  std::span<const VarHandle> reads, writes;
  const char* name;
};

thread_local std::vector<Entry> tls_holds;

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

bool Contains(std::span<const VarHandle> sorted, VarHandle v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

// The hold whose serial `mark` is, on this thread's stack; null if none.
const Entry* HoldMarked(uint64_t mark) {
  if (mark == 0) return nullptr;
  for (const Entry& h : tls_holds)
    if (h.serial == mark) return &h;
  return nullptr;
}

}  // namespace

HoldScope::HoldScope(const Opr* op) {
  tls_holds.push_back({NextSerial(), op->vars.reads(), op->vars.writes(), op->name});
}

HoldScope::HoldScope(HoldRef hold) : keep_(std::move(hold)) {
  TS_DCHECK(keep_);
  tls_holds.push_back({keep_->serial, keep_->reads, keep_->writes, keep_->name.c_str()});
}

HoldScope::~HoldScope() {
  TS_DCHECK(!tls_holds.empty());
  tls_holds.pop_back();
}

HoldRef CurrentHold() {
  if (tls_holds.empty()) return nullptr;
  const Entry& h = tls_holds.back();
  auto hold = std::make_shared<Hold>();
  hold->serial = h.serial;
  hold->reads.assign(h.reads.begin(), h.reads.end());
  hold->writes.assign(h.writes.begin(), h.writes.end());
  hold->name = h.name;
  return hold;
}

bool Holding() {
  return !tls_holds.empty();
}

const char* HoldName(uint64_t serial) {
  const Entry* h = HoldMarked(serial);
  return h ? h->name : "unnamed";
}

uint64_t HoldAhead(std::span<const VarHandle> reads, std::span<const VarHandle> writes) {
  uint64_t behind = 0;
  for (const Entry& h : tls_holds) {
    for (VarHandle v : reads)
      if (Contains(h.writes, v)) behind = h.serial;
    for (VarHandle v : writes)
      if (Contains(h.writes, v) || Contains(h.reads, v)) behind = h.serial;
    if (behind) break;
  }
  if (!behind) {
    for (VarHandle v : reads)
      if (const Entry* h = HoldMarked(v->owed_write.load(std::memory_order_relaxed)))
        behind = h->serial;
    for (VarHandle v : writes) {
      if (const Entry* h = HoldMarked(v->owed_write.load(std::memory_order_relaxed)))
        behind = h->serial;
      if (const Entry* h = HoldMarked(v->owed_read.load(std::memory_order_relaxed)))
        behind = h->serial;
    }
  }
  return behind;
}

void MarkIfBehindHold(std::span<const VarHandle> reads, std::span<const VarHandle> writes) {
  if (tls_holds.empty()) return;
  const uint64_t behind = HoldAhead(reads, writes);
  if (!behind) return;
  for (VarHandle v : writes) v->owed_write.store(behind, std::memory_order_relaxed);
  for (VarHandle v : reads) v->owed_read.store(behind, std::memory_order_relaxed);
}

void CheckWaitAgainstHolds(VarHandle var, bool for_write, const char* what) {
  for (auto h = tls_holds.rbegin(); h != tls_holds.rend(); ++h) {
    TS_CHECK(!(Contains(h->writes, var) || (for_write && Contains(h->reads, var))))
        << what << " inside engine op '" << h->name
        << "' on a variable that op uses would wait for the op itself";
  }
  const Entry* behind = HoldMarked(var->owed_write.load(std::memory_order_relaxed));
  if (!behind && for_write) behind = HoldMarked(var->owed_read.load(std::memory_order_relaxed));
  TS_CHECK(!behind) << what << " inside engine op '" << (behind ? behind->name : "")
                    << "' on the result of work pushed inside it that must wait for the op "
                       "would wait for the op itself";
}

}  // namespace tessera::engine
