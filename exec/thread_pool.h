// A small fixed thread pool for data-parallel loops inside kernels.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ovfix::exec {

class ThreadPool {
 public:
  // threads <= 0: one per hardware core. 1: everything runs on the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // The calling thread's place in the pool it works for: 0 for a thread that is not one of
  // a pool's workers (the caller of ParallelFor), 1 .. size()-1 for the workers.
  static int CurrentThread();
  // Calls fn(begin, end) over [0, n) split into about size() contiguous chunks of at least
  // `min_chunk` items; the caller takes part. Returns when all chunks are done.
  void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0;
  int64_t next_chunk_ = 0, chunks_ = 0;
  // Written under mutex_; atomic so spinning threads can watch them without the lock.
  std::atomic<int64_t> chunks_done_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

// ParallelFor on `pool`, or a plain loop when pool is null.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t min_chunk,
                 const std::function<void(int64_t, int64_t)>& fn);

// Calls fn(i) for every i in [0, n) (the caller takes part; a plain loop when pool is null).
// The items are cut into one contiguous range per thread, and thread t takes the items of
// range t first, so that a loop run again with the same n gives each thread the same items
// (the weights or rows it read last time are still in its own cache). A thread that finishes
// its range takes what is left of the others', one item at a time: a thread held up (other
// work on the machine, a slower item) leaves its remaining items to the others instead of
// holding the whole loop back. For work cut into more items than threads.
void ParallelForEach(ThreadPool* pool, int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace ovfix::exec
