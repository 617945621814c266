#include "lab/run_workers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lab/exit_status.hpp"
#include "lab/experiment.hpp"
#include "lab/stop_request.hpp"
#include "reports/results_json.hpp"

namespace fplab {

namespace {

constexpr std::size_t kMaxJobs = 64;
constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();
static_assert(std::atomic<std::size_t>::is_always_lock_free, "shared between processes");

// In memory shared by every worker (mmap MAP_SHARED before the forks).
struct Shared {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::array<std::atomic<std::size_t>, kMaxJobs> running{};
};

// The run in progress, for kill_workers and running_experiments (a stop
// action runs in this process's main thread).
Shared* current_shared = nullptr;
std::vector<pid_t> current_children;

// Takes the next experiment for `worker` in `order` (plan indices), or
// returns n = order.size() when none is left.
std::size_t take(Shared& shared, std::size_t worker, const std::vector<std::size_t>& order) {
  const std::size_t n = order.size();
  const std::size_t k = shared.failed.load() ? n : shared.next.fetch_add(1);
  const std::size_t i = k < n ? order[k] : n;
  shared.running[worker].store(i < n ? i : kIdle);
  return i;
}

// A frame on a child's pipe: kind, index, exit code, payload length, payload
// (a record as results.json text, or an error message).
struct FrameHeader {
  char kind;  // 'R' record, 'E' error
  std::uint64_t index;
  std::int32_t code;  // 'E': an ExitStatus code, or -1 for an exception
  std::uint64_t length;
};
constexpr std::size_t kHeaderBytes = 1 + 8 + 4 + 8;

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t k = ::write(fd, data, size);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    data += k;
    size -= static_cast<std::size_t>(k);
  }
  return true;
}

void send(int fd, const FrameHeader& h, const std::string& payload) {
  std::array<char, kHeaderBytes> header{};
  header[0] = h.kind;
  std::memcpy(header.data() + 1, &h.index, 8);
  std::memcpy(header.data() + 9, &h.code, 4);
  std::memcpy(header.data() + 13, &h.length, 8);
  if (!write_all(fd, header.data(), header.size()) ||
      !write_all(fd, payload.data(), payload.size())) {
    std::_Exit(1);  // the parent is gone
  }
}

std::string record_text(const ExperimentRecord& record) {
  Results one;
  one.experiments.push_back(record);
  return to_json_without_fingerprint(one).dump();
}

ExperimentRecord record_from_text(const std::string& text) {
  return results_from_json_unchecked(nlohmann::json::parse(text)).experiments.at(0);
}

// One failure: where, and what to throw.
struct Failure {
  std::size_t index = 0;
  std::exception_ptr error;
};

std::exception_ptr failure_of(std::int32_t code, const std::string& message) {
  if (code >= 0) return std::make_exception_ptr(ExitStatus{code});
  return std::make_exception_ptr(std::runtime_error(message));
}

[[noreturn]] void child_main(int fd, std::size_t worker, pid_t parent,
                             const std::vector<PlannedRun>& plan,
                             const std::vector<std::size_t>& order, bool quick, bool show_progress,
                             const WorkerHooks& hooks, Shared& shared) {
  // Die with the parent; leave SIGINT/SIGTERM to it (it kills us and reports).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) std::_Exit(1);
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  const std::size_t n = plan.size();
  for (std::size_t i = take(shared, worker, order); i < n; i = take(shared, worker, order)) {
    FrameHeader h{'E', i, -1, 0};
    std::string payload;
    try {
      if (hooks.started) hooks.started(i);
      payload = record_text(run_experiment(plan[i], quick, show_progress));
      h.kind = 'R';
    } catch (const ExitStatus& e) {
      h.code = e.code;
    } catch (const std::exception& e) {
      payload = e.what();
    } catch (...) {
      payload = "unknown error";
    }
    h.length = payload.size();
    std::fflush(stdout);
    std::fflush(stderr);
    send(fd, h, payload);
    if (h.kind == 'E') {
      shared.failed.store(true);
      break;
    }
  }
  shared.running[worker].store(kIdle);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
}

// Reads every child's frames until each pipe is closed.
class Collector {
 public:
  Collector(std::size_t n, const WorkerHooks& hooks, Shared& shared)
      : records_(n), hooks_(hooks), shared_(shared) {}

  void add_record(std::size_t i, ExperimentRecord record) {
    const std::lock_guard<std::mutex> lock(mutex_);
    records_[i] = std::move(record);
    if (hooks_.finished) hooks_.finished(i, *records_[i]);
  }
  void add_failure(std::size_t i, std::exception_ptr error) {
    const std::lock_guard<std::mutex> lock(mutex_);
    shared_.failed.store(true);
    failures_.push_back({i, std::move(error)});
  }

  void drain(std::vector<int> fds) {
    std::vector<std::string> buffers(fds.size());
    std::vector<char> chunk(1 << 16);
    for (;;) {
      std::vector<pollfd> polled;
      for (const int fd : fds) {
        if (fd >= 0) polled.push_back({fd, POLLIN, 0});
      }
      if (polled.empty()) break;
      if (::poll(polled.data(), polled.size(), -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (std::size_t c = 0; c < fds.size(); ++c) {
        if (fds[c] < 0) continue;
        const auto it = std::find_if(polled.begin(), polled.end(),
                                     [&](const pollfd& p) { return p.fd == fds[c]; });
        if (it == polled.end() || it->revents == 0) continue;
        const ssize_t k = ::read(fds[c], chunk.data(), chunk.size());
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
          ::close(fds[c]);
          fds[c] = -1;
          continue;
        }
        buffers[c].append(chunk.data(), static_cast<std::size_t>(k));
        take_frames(buffers[c]);
      }
    }
    done_.store(true);
  }

  [[nodiscard]] bool done() const { return done_.load(); }

  // After every worker stopped: the records in plan order, or the first
  // failure in plan order thrown.
  std::vector<ExperimentRecord> result() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!failures_.empty()) {
      const auto first =
          std::min_element(failures_.begin(), failures_.end(),
                           [](const Failure& a, const Failure& b) { return a.index < b.index; });
      std::rethrow_exception(first->error);
    }
    std::vector<ExperimentRecord> out;
    for (auto& r : records_) {
      if (!r) throw std::logic_error("fplab run: an experiment's record never arrived");
      out.push_back(std::move(*r));
    }
    return out;
  }

 private:
  void take_frames(std::string& buffer) {
    while (buffer.size() >= kHeaderBytes) {
      FrameHeader h{};
      h.kind = buffer[0];
      std::memcpy(&h.index, buffer.data() + 1, 8);
      std::memcpy(&h.code, buffer.data() + 9, 4);
      std::memcpy(&h.length, buffer.data() + 13, 8);
      if (buffer.size() < kHeaderBytes + h.length) return;
      const std::string payload = buffer.substr(kHeaderBytes, h.length);
      buffer.erase(0, kHeaderBytes + h.length);
      if (h.kind == 'R') {
        try {
          add_record(h.index, record_from_text(payload));
        } catch (...) {
          add_failure(h.index, std::current_exception());
        }
      } else {
        add_failure(h.index, failure_of(h.code, payload));
      }
    }
  }

  std::mutex mutex_;
  std::vector<std::optional<ExperimentRecord>> records_;
  std::vector<Failure> failures_;
  const WorkerHooks& hooks_;
  Shared& shared_;
  std::atomic<bool> done_{false};
};

// Every experiment in this process, one after another; what runs is in a
// Shared of its own, so that a stop message names it as with workers.
std::vector<ExperimentRecord> run_here(const std::vector<PlannedRun>& plan, bool quick,
                                       bool show_progress, const WorkerHooks& hooks) {
  Shared shared;
  for (auto& r : shared.running) r.store(kIdle);
  current_shared = &shared;
  struct Reset {
    ~Reset() { current_shared = nullptr; }
  } reset;
  const StopWatcher watcher;  // stops between progress points too (lab/stop_request.hpp)
  std::vector<ExperimentRecord> out;
  std::vector<std::size_t> in_plan_order(plan.size());
  std::iota(in_plan_order.begin(), in_plan_order.end(), std::size_t{0});
  for (std::size_t i = take(shared, 0, in_plan_order); i < plan.size();
       i = take(shared, 0, in_plan_order)) {
    stop_if_requested();
    if (hooks.started) hooks.started(i);
    out.push_back(run_experiment(plan[i], quick, show_progress));
    if (hooks.finished) hooks.finished(i, out.back());
  }
  return out;
}

}  // namespace

std::vector<std::size_t> dispatch_order(const std::vector<PlannedRun>& plan,
                                        const std::function<double(std::size_t index)>& cost) {
  std::vector<double> costs;
  costs.reserve(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) costs.push_back(cost(i));
  std::vector<std::size_t> order(plan.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&costs](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  return order;
}

std::vector<std::string> running_experiments(const std::vector<PlannedRun>& plan) {
  std::vector<std::size_t> running;
  if (current_shared != nullptr) {
    for (const auto& r : current_shared->running) {
      if (const std::size_t i = r.load(); i < plan.size()) running.push_back(i);
    }
  }
  std::sort(running.begin(), running.end());
  std::vector<std::string> ids;
  ids.reserve(running.size());
  for (const auto i : running) ids.push_back(plan[i].experiment->info.id);
  return ids;
}

void kill_workers() {
  for (const pid_t pid : current_children) ::kill(pid, SIGKILL);
}

namespace {

// Forks workers 1..workers-1, each running child_main over `order` and
// writing its frames to a pipe; returns the pipes' read ends (the children
// in current_children). A failed pipe or fork stops forking: fewer
// workers, the parent runs the rest.
std::vector<int> fork_workers(std::size_t workers, const std::vector<PlannedRun>& plan,
                              const std::vector<std::size_t>& order, bool quick, bool show_progress,
                              const WorkerHooks& hooks, Shared& shared) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  std::vector<int> fds;
  for (std::size_t w = 1; w < workers; ++w) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) break;
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const int fd : fds) ::close(fd);
      ::close(pipe_fds[0]);
      child_main(pipe_fds[1], w, parent, plan, order, quick, show_progress, hooks, shared);
    }
    ::close(pipe_fds[1]);
    if (pid < 0) {
      ::close(pipe_fds[0]);
      break;
    }
    current_children.push_back(pid);
    fds.push_back(pipe_fds[0]);
  }
  return fds;
}

// The parent as worker 0: takes experiments in `order` like the children
// until none is left or one fails (its failure recorded, it takes no more).
void run_as_worker_zero(const std::vector<PlannedRun>& plan, const std::vector<std::size_t>& order,
                        bool quick, bool show_progress, const WorkerHooks& hooks, Shared& shared,
                        Collector& collector) {
  const std::size_t n = plan.size();
  for (std::size_t i = take(shared, 0, order); i < n; i = take(shared, 0, order)) {
    try {
      stop_if_requested();
      if (hooks.started) hooks.started(i);
      collector.add_record(i, run_experiment(plan[i], quick, show_progress));
    } catch (...) {
      collector.add_failure(i, std::current_exception());
      break;
    }
  }
  shared.running[0].store(kIdle);
}

// Waits for every child; one killed by a signal while running an
// experiment fails that experiment.
void reap_workers(const std::vector<PlannedRun>& plan, const Shared& shared, Collector& collector) {
  for (std::size_t c = 0; c < current_children.size(); ++c) {
    int status = 0;
    while (::waitpid(current_children[c], &status, 0) < 0 && errno == EINTR) {
    }
    const std::size_t i = shared.running[c + 1].load();
    if (WIFSIGNALED(status) && i < plan.size()) {
      collector.add_failure(i, std::make_exception_ptr(std::runtime_error(
                                   "the worker process running " + plan[i].experiment->info.id +
                                   " died of signal " + std::to_string(WTERMSIG(status)))));
    }
  }
  current_children.clear();
}

}  // namespace

std::vector<ExperimentRecord> run_in_workers(const std::vector<PlannedRun>& plan, bool quick,
                                             bool show_progress, unsigned jobs,
                                             const WorkerHooks& hooks) {
  const std::size_t n = plan.size();
  const std::size_t workers = std::clamp<std::size_t>(jobs, 1, std::min(n, kMaxJobs));
  if (workers <= 1) return run_here(plan, quick, show_progress, hooks);

  // Shared between the processes: which experiment each worker runs and
  // the next one to take.
  void* memory =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return run_here(plan, quick, show_progress, hooks);
  auto* shared = new (memory) Shared;
  for (auto& r : shared->running) r.store(kIdle);

  std::function<double(std::size_t)> cost = hooks.cost;
  if (!cost) cost = [&plan](std::size_t i) { return run_cost(plan[i].experiment->info.id); };
  const std::vector<std::size_t> order = dispatch_order(plan, cost);
  const std::vector<int> fds =
      fork_workers(workers, plan, order, quick, show_progress, hooks, *shared);
  current_shared = shared;
  auto watcher = std::make_optional<StopWatcher>();  // lab/stop_request.hpp

  Collector collector(n, hooks, *shared);
  std::thread reader([&collector, fds] { collector.drain(fds); });
  run_as_worker_zero(plan, order, quick, show_progress, hooks, *shared, collector);
  // The children finish what they run; meanwhile a stop request is answered.
  while (!collector.done()) {
    stop_if_requested();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  watcher.reset();
  reader.join();
  reap_workers(plan, *shared, collector);
  current_shared = nullptr;
  shared->~Shared();
  ::munmap(memory, sizeof(Shared));
  return collector.result();
}

}  // namespace fplab
