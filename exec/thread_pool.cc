#include "exec/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>

namespace ovfix::exec {
namespace {

// Kernels come in quick succession and waking a sleeping thread costs microseconds, more
// than many small ops take: threads spin this many pauses (tens of microseconds) first.
constexpr int kSpinPauses = 20000;

thread_local int t_thread_index = 0;

}  // namespace

int ThreadPool::CurrentThread() { return t_thread_index; }

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop(int index) {
  t_thread_index = index;
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    lock.unlock();
    for (int i = 0; i < kSpinPauses && generation_.load(std::memory_order_acquire) == seen &&
                    !stop_.load(std::memory_order_relaxed);
         ++i) {
      _mm_pause();
    }
    lock.lock();
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (next_chunk_ < chunks_) {
      const int64_t c = next_chunk_++;
      const auto* job = job_;
      const int64_t begin = c * job_chunk_, end = std::min(job_n_, begin + job_chunk_);
      lock.unlock();
      (*job)(begin, end);
      lock.lock();
      if (++chunks_done_ == chunks_) done_.notify_all();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t parts = std::min<int64_t>(size(), (n + min_chunk - 1) / min_chunk);
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = (n + parts - 1) / parts;
  chunks_ = (n + job_chunk_ - 1) / job_chunk_;
  next_chunk_ = 0;
  chunks_done_ = 0;
  ++generation_;
  wake_.notify_all();
  while (next_chunk_ < chunks_) {
    const int64_t c = next_chunk_++;
    const int64_t begin = c * job_chunk_, end = std::min(n, begin + job_chunk_);
    lock.unlock();
    fn(begin, end);
    lock.lock();
    ++chunks_done_;
  }
  if (chunks_done_ != chunks_) {
    lock.unlock();
    for (int i = 0; i < kSpinPauses && chunks_done_.load(std::memory_order_acquire) != chunks_;
         ++i) {
      _mm_pause();
    }
    lock.lock();
    done_.wait(lock, [&] { return chunks_done_ == chunks_; });
  }
  job_ = nullptr;
}

void ParallelFor(ThreadPool* pool, int64_t n, int64_t min_chunk,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (pool == nullptr) {
    if (n > 0) fn(0, n);
    return;
  }
  pool->ParallelFor(n, min_chunk, fn);
}

void ParallelForEach(ThreadPool* pool, int64_t n, const std::function<void(int64_t)>& fn) {
  if (pool == nullptr || pool->size() <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const int threads = static_cast<int>(std::min<int64_t>(pool->size(), n));
  // Range r is [r * n / threads, (r + 1) * n / threads); next[r] is its next unclaimed item.
  struct alignas(64) Cursor {
    std::atomic<int64_t> next;
  };
  std::vector<Cursor> cursors(threads);
  for (int r = 0; r < threads; ++r) cursors[r].next = r * n / threads;
  pool->ParallelFor(threads, 1, [&](int64_t, int64_t) {
    const int own = ThreadPool::CurrentThread() % threads;
    for (int step = 0; step < threads; ++step) {
      const int r = (own + step) % threads;
      const int64_t end = (r + 1) * n / threads;
      for (int64_t i = cursors[r].next++; i < end; i = cursors[r].next++) fn(i);
    }
  });
}

}  // namespace ovfix::exec
