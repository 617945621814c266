#include "mpi/worker.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <variant>

#include "collectives/allreduce_model.hpp"
#include "collectives/exact_limbs.hpp"
#include "collectives/npy_matrix.hpp"
#include "mpi/abort.hpp"
#include "mpi/allreduce.hpp"

namespace fplab {

namespace {

// The command its abort messages name.
constexpr const char* kAllreduceCommand = "mpi-allreduce";

// coll_tuned_allreduce_algorithm for communicators created from now on.
void pin_algorithm(int algorithm, int rank) {
  int index = 0;
  if (MPI_T_cvar_get_index("coll_tuned_allreduce_algorithm", &index) != MPI_SUCCESS) {
    abort_mpi_job(kAllreduceCommand, rank,
                  "Open MPI has no coll_tuned_allreduce_algorithm (coll/tuned missing?)");
  }
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS ||
      MPI_T_cvar_write(handle, &algorithm) != MPI_SUCCESS) {
    abort_mpi_job(kAllreduceCommand, rank, "cannot set coll_tuned_allreduce_algorithm");
  }
  MPI_T_cvar_handle_free(&handle);
}

template <class T>
void exact_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const ExactLimbs<T>*>(in);
  auto* b = static_cast<ExactLimbs<T>*>(inout);
  for (int i = 0; i < *len; ++i) b[i].merge(a[i]);
}

// What this rank contributes: its row, or with --split-rows its block of
// rows (summed left to right for MPI_SUM, merged exactly for the exact op).
template <class T>
struct Contribution {
  std::span<const T> rows;  // first row of the block, `count` rows of m
  std::size_t count = 1, m = 0;
};

template <class T>
struct Reduced {
  std::vector<T> values;
  double seconds_per_call = 0;  // this rank's, with time_repeats
};

// Runs `call` `repeats` times between barriers on `comm`: mean seconds per call.
template <class Call>
double time_calls(MPI_Comm comm, std::size_t repeats, Call call) {
  if (repeats == 0) return 0;
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  for (std::size_t i = 0; i < repeats; ++i) call();
  const double seconds = MPI_Wtime() - start;
  MPI_Barrier(comm);
  return seconds / static_cast<double>(repeats);
}

template <class T>
Reduced<T> reduce(const MpiReduction& r, const Contribution<T>& mine, std::size_t repeats,
                  int rank) {
  const std::span<const T> row = mine.rows.subspan(0, mine.m);
  pin_algorithm(r.algorithm, rank);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // a new coll/tuned module reads the pin
  const int m = static_cast<int>(row.size());
  std::vector<T> out(row.size());
  double seconds = 0;
  if (!r.exact_op) {
    const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
    std::vector<T> send(row.begin(), row.end());
    for (std::size_t i = 1; i < mine.count; ++i) {
      for (std::size_t j = 0; j < mine.m; ++j) send[j] = send[j] + mine.rows[i * mine.m + j];
    }
    const auto call = [&] {
      if (MPI_Allreduce(send.data(), out.data(), m, type, MPI_SUM, comm) != MPI_SUCCESS) {
        abort_mpi_job(kAllreduceCommand, rank, "MPI_Allreduce failed");
      }
    };
    call();
    seconds = time_calls(comm, repeats, call);
  } else {
    MPI_Datatype type;
    MPI_Type_contiguous(static_cast<int>(sizeof(ExactLimbs<T>)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    MPI_Op op;
    MPI_Op_create(&exact_op<T>, /*commute=*/1, &op);
    std::vector<ExactLimbs<T>> send, recv(row.size());
    send.reserve(row.size());
    for (T v : row) send.push_back(ExactLimbs<T>::of(v));
    for (std::size_t i = 1; i < mine.count; ++i) {
      for (std::size_t j = 0; j < mine.m; ++j) {
        send[j].merge(ExactLimbs<T>::of(mine.rows[i * mine.m + j]));
      }
    }
    const auto call = [&] {
      if (MPI_Allreduce(send.data(), recv.data(), m, type, op, comm) != MPI_SUCCESS) {
        abort_mpi_job(kAllreduceCommand, rank, "MPI_Allreduce (exact op) failed");
      }
    };
    call();
    seconds = time_calls(comm, repeats, call);
    for (std::size_t j = 0; j < row.size(); ++j) out[j] = recv[j].round();
    MPI_Op_free(&op);
    MPI_Type_free(&type);
  }
  MPI_Comm_free(&comm);
  return {std::move(out), seconds};
}

void hang_forever(const std::filesystem::path& pid_file) {
  {
    const auto tmp = pid_file.string() + ".tmp";
    std::ofstream(tmp) << ::getpid() << "\n";
    std::filesystem::rename(tmp, pid_file);
  }
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

template <class T>
void run(const Matrix<T>& data, const std::vector<MpiReduction>& reductions,
         const MpiWorkerArgs& args, std::size_t file, int rank, int size) {
  if (args.split_rows ? data.rows < static_cast<std::size_t>(size)
                      : data.rows != static_cast<std::size_t>(size)) {
    abort_mpi_job(kAllreduceCommand, rank,
                  args.files[file].string() + " has " + std::to_string(data.rows) + " rows for " +
                      std::to_string(size) + " ranks");
  }
  if (data.cols == 0 || data.cols > (1u << 30))
    abort_mpi_job(kAllreduceCommand, rank, "m outside 1..2^30");
  if (rank == args.hang_rank) hang_forever(args.pid_file);
  const auto [first, last] = args.split_rows ? row_block(data.rows, static_cast<std::size_t>(size),
                                                         static_cast<std::size_t>(rank))
                                             : std::pair<std::size_t, std::size_t>(rank, rank + 1);
  const Contribution<T> mine{
      std::span<const T>(data.values).subspan(first * data.cols, (last - first) * data.cols),
      last - first, data.cols};
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  const std::size_t block = static_cast<std::size_t>(size) * data.cols;  // one reduction
  std::vector<T> gathered(rank == 0 ? block * reductions.size() : 0);
  std::vector<double> slowest(reductions.size());  // rank 0: max over ranks
  for (std::size_t k = 0; k < reductions.size(); ++k) {
    const Reduced<T> result = reduce<T>(reductions[k], mine, args.time_repeats, rank);
    T* target = rank == 0 ? gathered.data() + k * block : nullptr;
    MPI_Gather(result.values.data(), static_cast<int>(data.cols), type, target,
               static_cast<int>(data.cols), type, 0, MPI_COMM_WORLD);
    MPI_Reduce(&result.seconds_per_call, &slowest[k], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  }
  if (rank != 0) return;
  if (args.time_repeats > 0) {
    const auto times = mpi_times_path(args.out, file);
    const auto tmp = times.string() + ".tmp";
    {
      std::ofstream out(tmp);
      for (const double s : slowest) out << fmt::format("{:a}\n", s);
      if (!out) abort_mpi_job(kAllreduceCommand, rank, "cannot write " + tmp);
    }
    std::filesystem::rename(tmp, times);
  }
  const auto final_path = mpi_output_path(args.out, file);
  const auto tmp = final_path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << mpi_output_header(sizeof(T) == 4 ? "f32" : "f64", static_cast<std::size_t>(size),
                             data.cols, reductions.size());
    out.write(reinterpret_cast<const char*>(gathered.data()),
              static_cast<std::streamsize>(gathered.size() * sizeof(T)));
    out << "end\n";
    if (!out) abort_mpi_job(kAllreduceCommand, rank, "cannot write " + tmp);
  }
  std::filesystem::rename(tmp, final_path);
}

}  // namespace

int run_mpi_allreduce_worker(const MpiWorkerArgs& args) {
  int provided = 0;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    std::vector<MpiReduction> reductions;
    for (const auto& s : args.reductions) reductions.push_back(MpiReduction::parse(s));
    if (reductions.empty()) throw std::invalid_argument("no reductions given");
    if (args.files.empty()) throw std::invalid_argument("no input files given");
    for (std::size_t k = 0; k < args.files.size(); ++k) {
      const NumberMatrix data = read_npy_matrix(args.files[k]);
      std::visit([&](const auto& m) { run(m, reductions, args, k, rank, size); }, data);
    }
  } catch (const std::exception& e) {
    abort_mpi_job(kAllreduceCommand, rank, e.what());
  }
  // MPI_T first: Open MPI 4.1.4 crashes in MPI_T_finalize after MPI_Finalize.
  MPI_T_finalize();
  MPI_Finalize();
  return 0;
}

}  // namespace fplab
