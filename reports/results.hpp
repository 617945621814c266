// The results of experiments, as data: what `fplab run` computes, what
// results.json stores, and all that report.md, report.html, the CSV files
// and the plots are rendered from. The JSON form is specified in
// docs/results-format.md; reports/results_json.hpp reads and writes it.
//
// Addressing: every result value has a stable path
//     <experiment id>/<table id>/<row key>/<column id>
// (none of the four may contain '/'), and carries its exact bits: float32
// and float64 values are stored as exact hex plus shortest round-trip
// decimal. `flatten()` lists every (path, value) pair, for tools such as a
// `fplab diff` that compare two results files value by value.
//
// Results vs measurements: `tables` hold results that must be bit-identical
// from run to run for the same build and parameters; `measurements` hold
// timings and anything else that may vary between runs (thread scheduling).
// The fingerprint covers parameters, tables and verdicts, never
// measurements, timings or the context block.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fplab {

inline constexpr int kResultsSchemaVersion = 1;
inline constexpr const char* kResultsSchemaName = "fplab-results";

enum class ValueType { float32, float64, integer, text };
std::string_view name(ValueType t);

// One typed result value. Floats compare by their bits (so NaN == NaN and
// -0 != +0): two results are the same when they are bit-identical.
class Value {
 public:
  Value() : v_(std::string()) {}
  static Value f32(float x) { return Value(x); }
  static Value f64(double x) { return Value(x); }
  static Value integer(std::int64_t x) { return Value(x); }
  static Value text(std::string s) { return Value(std::move(s)); }
  // By the C++ type: float -> float32, double -> float64.
  static Value of(float x) { return f32(x); }
  static Value of(double x) { return f64(x); }

  [[nodiscard]] ValueType type() const { return static_cast<ValueType>(v_.index()); }
  [[nodiscard]] bool is_float() const {
    return type() == ValueType::float32 || type() == ValueType::float64;
  }
  [[nodiscard]] float as_f32() const { return std::get<float>(v_); }
  [[nodiscard]] double as_f64() const { return std::get<double>(v_); }
  [[nodiscard]] std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
  [[nodiscard]] const std::string& as_text() const { return std::get<std::string>(v_); }
  // The value as a double (floats widen exactly; text gives NaN): for plots.
  [[nodiscard]] double to_double() const;
  // Shortest round-trip decimal for floats, digits for integers, the text.
  [[nodiscard]] std::string decimal() const;
  // Exact hex for floats ("0x1.999999999999ap-4"), else decimal().
  [[nodiscard]] std::string hex() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  template <class T>
  explicit Value(T x) : v_(std::move(x)) {}
  std::variant<float, double, std::int64_t, std::string> v_;
};

struct Column {
  std::string id;
  std::string title;
  // How report.md/html show numbers: a {fmt} spec such as ".9f" or ".3e";
  // empty for the shortest round-trip decimal. JSON and CSV always hold the
  // exact value whatever this says.
  std::string format;
  bool show_hex = false;  // add the exact hex beside the value in reports
};

struct Row {
  std::string key;
  std::map<std::string, Value> cells;  // by column id; a missing cell is empty
  Row& set(const std::string& column, Value v) {
    cells.insert_or_assign(column, std::move(v));
    return *this;
  }
  [[nodiscard]] const Value* get(const std::string& column) const;
};

struct Table {
  Table() = default;
  Table(std::string table_id, std::string table_title, std::string key_heading = "key")
      : id(std::move(table_id)), title(std::move(table_title)), key_title(std::move(key_heading)) {}

  std::string id;
  std::string title;
  std::string key_title = "key";  // heading of the row-key column
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::string caption;
  // false: a long data table (a histogram, a sweep) that the report links
  // as CSV and plots instead of printing; still in results.json.
  bool in_report = true;

  Table& add_column(std::string column_id, std::string column_title, std::string fmt = {},
                    bool hex = false);
  // Throws std::logic_error on a duplicate key or a key containing '/'.
  Row& add_row(std::string row_key);
  [[nodiscard]] const Row* find(std::string_view row_key) const;
  [[nodiscard]] const Column* column(std::string_view column_id) const;
  [[nodiscard]] const Value* get(std::string_view row_key, std::string_view column_id) const;
};

// Throws std::logic_error unless the table's and its columns' ids are
// non-empty and free of '/' and every cell of every row names a column.
void validate_table(const Table& t);

struct Series {
  std::string column;  // y values: a column of the figure's table
  std::string title;
  std::string style = "linespoints";  // gnuplot: lines, points, linespoints, impulses, dashed
  // Only the rows whose `where_column` cell prints as `where_value` (one
  // series per policy of a long table); empty: every row.
  std::string where_column = {};
  std::string where_value = {};
  // A cell printing as this is no point (a sentinel such as -1 for "none").
  std::string missing = {};
};

// A vertical line per row of a table: at the row's `x` column, labelled
// with the row key and, in per cent, each of the `shares` columns.
struct Markers {
  std::string table;  // a table of the same experiment; empty: no markers
  std::string x;
  std::vector<std::string> shares;
  std::vector<std::string> share_titles;  // one per share column
  std::vector<std::string> rows;          // only these rows, in this order; empty: every row
};

// A plot of columns of one table (or measurement table) against another
// column; rendered by gnuplot from the table alone.
struct Figure {
  std::string id;
  std::string title;
  std::string table;  // id of a table or measurement of the same experiment
  std::string x;      // column id; empty: the row keys, parsed as numbers
  std::string xlabel;
  std::string ylabel;
  bool logx = false;
  bool logy = false;
  std::vector<Series> series;
  std::string caption;
  // "lines" (default): series against x; "bars": one cluster of bars per
  // row, labelled by the row key (x unused).
  std::string kind = "lines";
  Markers markers = {};
  // Drawn 560 px wide with an 18 px font, so that on a 390 px phone its
  // text still reads at 11 px or more; short titles and key lines only.
  bool compact = false;
};

// A verdict: the claim's figure agrees with ours (reproduced), does not
// (differs), or the run was too small to tell either way (too_little_data:
// each experiment's rule, docs/claims.md "Too little data for a verdict").
enum class Status { reproduced, differs, too_little_data };
std::string_view name(Status s);  // "reproduced", "differs", "too little data"
// The inverse of name(); throws std::invalid_argument naming the three.
Status parse_status(std::string_view text);

struct ClaimRef {
  std::string id;      // "A1"
  std::string text;    // the claim as published
  std::string source;  // who published it
  // The claimed figure (lab/claims.cpp's table), for add_verdict's
  // four-argument form; a verdict records it as `claimed`. Not written to
  // results.json on its own (the verdicts carry it).
  std::string claimed = {};
};

struct Verdict {
  std::string claim;  // claim id
  std::string claim_text;
  std::string source;
  std::string ours;     // our figure, as text
  std::string claimed;  // the published figure, as text
  Status status = Status::differs;
  std::string reason;
};

// A parameter as it was used: name, type name (int, real, text, int_list,
// real_list, text_list) and its value in canonical text form (lists
// comma-separated; reals as shortest round-trip decimals).
struct ParamRecord {
  std::string name;
  std::string type;
  std::string value;
};

// A file an experiment read (a data set, the model): its role in the
// experiment ("model", "data"), where it was, and the sha256 of its bytes.
// The fingerprint covers role and digest, not the path (which differs
// between checkouts while the bytes do not).
struct InputFile {
  std::string role;
  std::string path;
  std::string sha256;
};

// A model an experiment loaded (experiments/model_support.hpp's
// experiment_model): what its `model` parameter said, where that resolved
// to, what the model is, and each file it was read from with the sha256 of
// its bytes. The same digests are in `inputs` (and so in the fingerprint);
// this record adds what they are, and is not itself fingerprinted.
struct ModelFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::string sha256;
};
struct ModelRecord {
  std::string id;            // the `model` parameter as given: "bundled", a path, ORG/NAME
  std::string path;          // the file or directory it resolved to
  std::string format;        // "safetensors", "gguf"; the bundled model's "fplab-char-lm-v1"
  std::string architecture;  // "llama", "qwen2", "qwen3"; the bundled model's "fplab-char-lm"
  std::int64_t parameters = 0;
  std::string stored_dtype;      // the weights' type in the file: "BF16", "F16", "F32", ...
  std::vector<ModelFile> files;  // in the order read
};

struct ExperimentRecord {
  std::string id;
  std::string title;
  std::string description;
  std::uint64_t seed = 0;
  bool quick = false;
  std::vector<ParamRecord> parameters;
  std::vector<ClaimRef> claims;
  std::vector<Verdict> verdicts;
  std::vector<Table> tables;
  std::vector<Figure> figures;
  std::vector<std::string> notes;
  std::vector<InputFile> inputs;    // files read, in the order read
  std::vector<ModelRecord> models;  // models loaded (their files are among `inputs`)
  std::vector<Table> measurements;  // timings etc.: not part of the fingerprint
  double wall_seconds = 0.0;        // a timing: not part of the fingerprint

  Table& add_table(Table t);
  Table& add_measurement(Table t);
  void add_figure(Figure f);
  void add_note(std::string note) { notes.push_back(std::move(note)); }
  void add_input(InputFile f) { inputs.push_back(std::move(f)); }
  void add_model(ModelRecord m) { models.push_back(std::move(m)); }
  // A verdict on one of this experiment's claims; the claim's text and
  // source are copied from `claims`. Throws std::logic_error for an unknown id.
  void add_verdict(const std::string& claim, std::string ours, std::string claimed, Status status,
                   std::string reason);
  // The same with the claimed figure taken from the claim's `claimed`.
  void add_verdict(const std::string& claim, std::string ours, Status status, std::string reason);
  [[nodiscard]] const Table* table(std::string_view table_id) const;  // tables, then measurements
  [[nodiscard]] const Verdict* verdict(std::string_view claim) const;
};

// What produced a results file. Machine details: never part of the
// fingerprint.
struct ResultsContext {
  std::string fplab_version;
  std::string compiler_id;
  std::string compiler_version;
  std::string build_type;
  std::string fp_flags;  // the compile flags that affect floating point
  std::string openmp_runtime;
  std::string openmp_version;  // _OPENMP, e.g. "201511"
  int openmp_max_threads = 0;
  std::string cpu_model;
  std::string git_commit;  // "unknown" outside a git checkout
  bool git_dirty = false;
  std::string command;  // the command line
  bool quick = false;
  std::map<std::string, std::uint64_t> seeds;  // by experiment id
};

struct Results {
  int schema_version = kResultsSchemaVersion;
  ResultsContext context;
  std::vector<ExperimentRecord> experiments;
  double total_seconds = 0.0;

  [[nodiscard]] const ExperimentRecord* experiment(std::string_view id) const;
};

// Every result value with its path "<experiment>/<table>/<row>/<column>",
// in file order. Measurements are not included.
struct FlatValue {
  std::string path;
  Value value;
};
std::vector<FlatValue> flatten(const Results& r);

// sha256 over the parameters, the inputs' digests, every flattened result
// value (type and exact bits) and every verdict's figures and status; see
// docs/results-format.md.
std::string fingerprint(const Results& r);

}  // namespace fplab
