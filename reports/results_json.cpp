#include "reports/results_json.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"

namespace fplab {

using nlohmann::json;

namespace {

json value_json(const Value& v) {
  switch (v.type()) {
    case ValueType::float32:
    case ValueType::float64:
      return {{"type", name(v.type())}, {"hex", v.hex()}, {"decimal", v.decimal()}};
    case ValueType::integer:
      return {{"type", "int"}, {"value", v.as_int()}};
    case ValueType::text:
      break;
  }
  return {{"type", "text"}, {"value", v.as_text()}};
}

[[noreturn]] void bad(const std::string& why) {
  throw std::invalid_argument("results.json: " + why);
}

// Readers take `where`, the object being read ("experiment 'x' table 'y'"),
// so that every error names the object and the field.
std::string in(const std::string& where) { return where.empty() ? "" : where + ": "; }

const json& field(const json& j, const char* key, const std::string& where = {}) {
  if (!j.is_object()) bad(in(where) + "not a JSON object");
  if (!j.contains(key)) bad(in(where) + "missing field '" + key + "'");
  return j.at(key);
}

std::string str(const json& j, const char* key, const std::string& where = {}) {
  const json& f = field(j, key, where);
  if (!f.is_string()) bad(in(where) + "field '" + key + "' is not a string");
  return f.get<std::string>();
}

std::string str_or(const json& j, const char* key, const std::string& fallback = {}) {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>()
                                                                   : fallback;
}

// An optional array field: absent or null is empty; anything else but an
// array is an error naming it.
const json& array_or_empty(const json& j, const char* key, const std::string& where) {
  static const json empty = json::array();
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return empty;
  if (!j.at(key).is_array()) bad(in(where) + "field '" + key + "' is not an array");
  return j.at(key);
}

// A float needs "hex" or "decimal" (any valid spelling: "0x1.8p+0" and
// Python's "0x1.8000000000000p+0" are the same number); with both, they
// must be the same number.
template <class T>
T float_from(const json& j, const std::string& where) {
  const bool has_hex = j.contains("hex");
  const bool has_dec = j.contains("decimal");
  if (!has_hex && !has_dec) bad(in(where) + "a float needs 'hex' or 'decimal'");
  T a{};
  T b{};
  try {
    if (has_hex) a = parse_number<T>(str(j, "hex", where));
    if (has_dec) b = parse_number<T>(str(j, "decimal", where));
  } catch (const InputError& e) {
    bad(in(where) + e.what());
  }
  if (!has_hex) return b;
  if (!has_dec) return a;
  if (Value::f64(static_cast<double>(a)) != Value::f64(static_cast<double>(b)) &&
      !(std::isnan(a) && std::isnan(b))) {
    bad(in(where) + "hex " + str(j, "hex") + " and decimal " + str(j, "decimal") +
        " are different numbers");
  }
  return a;
}

Value value_from(const json& j, const std::string& where) {
  const std::string type = str(j, "type", where);
  if (type == "float32") return Value::f32(float_from<float>(j, where));
  if (type == "float64") return Value::f64(float_from<double>(j, where));
  if (type == "int") {
    const json& v = field(j, "value", where);
    if (!v.is_number_integer()) bad(in(where) + "int value is not an integer");
    return Value::integer(v.get<std::int64_t>());
  }
  if (type == "text") {
    return Value::text(str(j, "value", where));
  }
  bad(in(where) + "unknown value type '" + type + "' (float32, float64, int, text)");
}

json table_json(const Table& t) {
  json cols = json::array();
  for (const auto& c : t.columns) {
    cols.push_back(
        {{"id", c.id}, {"title", c.title}, {"format", c.format}, {"show_hex", c.show_hex}});
  }
  json rows = json::array();
  for (const auto& r : t.rows) {
    json cells = json::object();
    for (const auto& [k, v] : r.cells) cells[k] = value_json(v);
    rows.push_back({{"key", r.key}, {"cells", cells}});
  }
  return {{"id", t.id},           {"title", t.title},         {"key_title", t.key_title},
          {"caption", t.caption}, {"in_report", t.in_report}, {"columns", cols},
          {"rows", rows}};
}

Table table_from(const json& j, const std::string& experiment) {
  Table t;
  t.id = str(j, "id", experiment + " table");
  const std::string where = experiment + " table '" + t.id + "'";
  t.title = str_or(j, "title");
  t.key_title = str_or(j, "key_title", "key");
  t.caption = str_or(j, "caption");
  t.in_report = j.value("in_report", true);
  for (const auto& c : array_or_empty(j, "columns", where)) {
    t.columns.push_back({str(c, "id", where + " column"), str_or(c, "title"), str_or(c, "format"),
                         c.value("show_hex", false)});
  }
  const bool infer_columns = !j.contains("columns");
  for (const auto& r : field(j, "rows", where)) {
    Row row{str(r, "key", where + " row"), {}};
    const std::string row_where = where + " row '" + row.key + "'";
    const json& cells = field(r, "cells", row_where);
    if (!cells.is_object()) bad(row_where + ": field 'cells' is not an object");
    for (const auto& [k, v] : cells.items()) {
      row.cells.emplace(k, value_from(v, row_where + " cell '" + k + "'"));
      // Without "columns", every cell name is a column, in order of appearance.
      if (infer_columns && t.column(k) == nullptr) t.columns.push_back({k, k, "", false});
    }
    t.rows.push_back(std::move(row));
  }
  try {
    validate_table(t);
  } catch (const std::logic_error& e) {
    bad(where + ": " + e.what());
  }
  return t;
}

}  // namespace

// The plain records of a results file, written by nlohmann-json's to_json
// (found by argument-dependent lookup). Reading stays hand-written below:
// it names the object and the field of anything missing or mistyped.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ParamRecord, name, type, value)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InputFile, role, path, sha256)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ModelFile, path, bytes, sha256)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ModelRecord, id, path, format, architecture, parameters,
                                   stored_dtype, files)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Series, column, title, style, where_column, where_value, missing)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Markers, table, x, shares, share_titles, rows)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Figure, id, title, table, x, xlabel, ylabel, logx, logy, series,
                                   caption, kind, markers, compact)

// A claim's figure is not written on its own: the verdicts carry it.
void to_json(json& j, const ClaimRef& c) {
  j = {{"id", c.id}, {"text", c.text}, {"source", c.source}};
}

void to_json(json& j, const Verdict& v) {
  j = {{"claim", v.claim},     {"claim_text", v.claim_text}, {"source", v.source}, {"ours", v.ours},
       {"claimed", v.claimed}, {"status", name(v.status)},   {"reason", v.reason}};
}

namespace {

json context_json(const ResultsContext& c) {
  return {{"fplab_version", c.fplab_version},
          {"compiler", {{"id", c.compiler_id}, {"version", c.compiler_version}}},
          {"build_type", c.build_type},
          {"fp_flags", c.fp_flags},
          {"openmp",
           {{"runtime", c.openmp_runtime},
            {"version", c.openmp_version},
            {"max_threads", c.openmp_max_threads}}},
          {"cpu_model", c.cpu_model},
          {"git", {{"commit", c.git_commit}, {"dirty", c.git_dirty}}},
          {"command", c.command},
          {"quick", c.quick},
          {"seeds", c.seeds}};
}

ResultsContext context_from(const json& j) {
  ResultsContext c;
  c.fplab_version = str_or(j, "fplab_version");
  if (j.contains("compiler")) {
    c.compiler_id = str_or(j["compiler"], "id");
    c.compiler_version = str_or(j["compiler"], "version");
  }
  c.build_type = str_or(j, "build_type");
  c.fp_flags = str_or(j, "fp_flags");
  if (j.contains("openmp")) {
    c.openmp_runtime = str_or(j["openmp"], "runtime");
    c.openmp_version = str_or(j["openmp"], "version");
    c.openmp_max_threads = j["openmp"].value("max_threads", 0);
  }
  c.cpu_model = str_or(j, "cpu_model");
  if (j.contains("git")) {
    c.git_commit = str_or(j["git"], "commit");
    c.git_dirty = j["git"].value("dirty", false);
  }
  c.command = str_or(j, "command");
  c.quick = j.value("quick", false);
  if (j.contains("seeds") && j["seeds"].is_object()) {
    for (const auto& [k, v] : j["seeds"].items()) c.seeds[k] = v.get<std::uint64_t>();
  }
  return c;
}

json experiment_json(const ExperimentRecord& e) {
  json tables = json::array();
  for (const auto& t : e.tables) tables.push_back(table_json(t));
  json measurements = json::array();
  for (const auto& t : e.measurements) measurements.push_back(table_json(t));
  return {{"id", e.id},
          {"title", e.title},
          {"description", e.description},
          {"seed", e.seed},
          {"quick", e.quick},
          {"parameters", e.parameters},
          {"claims", e.claims},
          {"inputs", e.inputs},
          {"models", e.models},
          {"verdicts", e.verdicts},
          {"tables", tables},
          {"figures", e.figures},
          {"notes", e.notes},
          {"measurements", measurements},
          {"timing", {{"wall_seconds", e.wall_seconds}}}};
}

// One model record of experiment `where`, with its files.
ModelRecord model_from(const json& m, const std::string& where) {
  const std::string mw = where + " model";
  ModelRecord r{str(m, "id", mw),
                str_or(m, "path"),
                str_or(m, "format"),
                str_or(m, "architecture"),
                0,
                str_or(m, "stored_dtype"),
                {}};
  if (m.contains("parameters")) {
    if (!m["parameters"].is_number_integer()) bad(mw + ": field 'parameters' is not an integer");
    r.parameters = m["parameters"].get<std::int64_t>();
  }
  for (const auto& f : array_or_empty(m, "files", mw)) {
    if (f.contains("bytes") && !f["bytes"].is_number_unsigned())
      bad(mw + " file: field 'bytes' is not an unsigned integer");
    r.files.push_back({str(f, "path", mw + " file"), f.value("bytes", std::uint64_t{0}),
                       str(f, "sha256", mw + " file")});
  }
  return r;
}

// One verdict of experiment `where`; its status one of Status's names.
Verdict verdict_from(const json& v, const std::string& where) {
  const std::string vw = where + " verdict '" + str_or(v, "claim") + "'";
  Status status = Status::differs;
  try {
    status = parse_status(str(v, "status", vw));
  } catch (const std::invalid_argument& why) {
    bad(vw + ": " + why.what());
  }
  return {str(v, "claim", vw), str_or(v, "claim_text"), str_or(v, "source"),
          str(v, "ours", vw),  str(v, "claimed", vw),   status,
          str_or(v, "reason")};
}

// One figure of experiment `where` (its series and markers).
Figure figure_from(const json& f, const std::string& where) {
  Figure fig;
  fig.id = str(f, "id", where + " figure");
  const std::string fw = where + " figure '" + fig.id + "'";
  fig.title = str_or(f, "title");
  fig.table = str(f, "table", fw);
  fig.x = str_or(f, "x");
  fig.xlabel = str_or(f, "xlabel");
  fig.ylabel = str_or(f, "ylabel");
  fig.logx = f.value("logx", false);
  fig.logy = f.value("logy", false);
  fig.caption = str_or(f, "caption");
  for (const auto& s : array_or_empty(f, "series", fw)) {
    fig.series.push_back({str(s, "column", fw + " series"), str_or(s, "title"),
                          str_or(s, "style", "linespoints"), str_or(s, "where_column"),
                          str_or(s, "where_value"), str_or(s, "missing")});
  }
  fig.kind = str_or(f, "kind", "lines");
  fig.compact = f.value("compact", false);
  if (f.contains("markers") && f["markers"].is_object()) {
    const auto& m = f["markers"];
    fig.markers.table = str_or(m, "table");
    fig.markers.x = str_or(m, "x");
    for (const auto& c : array_or_empty(m, "shares", fw + " markers"))
      if (c.is_string()) fig.markers.shares.push_back(c.get<std::string>());
    for (const auto& c : array_or_empty(m, "share_titles", fw + " markers"))
      if (c.is_string()) fig.markers.share_titles.push_back(c.get<std::string>());
    for (const auto& c : array_or_empty(m, "rows", fw + " markers"))
      if (c.is_string()) fig.markers.rows.push_back(c.get<std::string>());
  }
  return fig;
}

ExperimentRecord experiment_from(const json& j) {
  ExperimentRecord e;
  e.id = str(j, "id", "experiment");
  const std::string where = "experiment '" + e.id + "'";
  e.title = str_or(j, "title", e.id);
  e.description = str_or(j, "description");
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned()) bad(where + ": field 'seed' is not an unsigned integer");
    e.seed = j["seed"].get<std::uint64_t>();
  }
  e.quick = j.value("quick", false);
  for (const auto& p : array_or_empty(j, "parameters", where)) {
    const std::string pw = where + " parameter";
    e.parameters.push_back({str(p, "name", pw), str(p, "type", pw), str(p, "value", pw)});
  }
  for (const auto& c : array_or_empty(j, "claims", where))
    e.claims.push_back({str(c, "id", where + " claim"), str_or(c, "text"), str_or(c, "source")});
  for (const auto& f : array_or_empty(j, "inputs", where)) {
    const std::string iw = where + " input";
    e.inputs.push_back({str(f, "role", iw), str_or(f, "path"), str(f, "sha256", iw)});
  }
  for (const auto& m : array_or_empty(j, "models", where)) e.models.push_back(model_from(m, where));
  for (const auto& v : array_or_empty(j, "verdicts", where))
    e.verdicts.push_back(verdict_from(v, where));
  // Tables are the point of an experiment: required (an empty list is fine).
  const json& tables = field(j, "tables", where);
  if (!tables.is_array()) bad(where + ": field 'tables' is not an array");
  for (const auto& t : tables) e.tables.push_back(table_from(t, where));
  for (const auto& t : array_or_empty(j, "measurements", where)) {
    e.measurements.push_back(table_from(t, where + " measurement"));
  }
  for (const auto& f : array_or_empty(j, "figures", where))
    e.figures.push_back(figure_from(f, where));
  for (const auto& n : array_or_empty(j, "notes", where)) {
    if (!n.is_string()) bad(where + ": a note is not a string");
    e.notes.push_back(n.get<std::string>());
  }
  if (j.contains("timing") && j["timing"].is_object()) {
    e.wall_seconds = j["timing"].value("wall_seconds", 0.0);
  }
  return e;
}

}  // namespace

json to_json_without_fingerprint(const Results& r) {
  json experiments = json::array();
  for (const auto& e : r.experiments) experiments.push_back(experiment_json(e));
  // The context names every file read (path -> sha256), gathered from the
  // experiments' inputs.
  json context = context_json(r.context);
  json files = json::object();
  for (const auto& e : r.experiments) {
    for (const auto& f : e.inputs) files[f.path] = f.sha256;
  }
  context["inputs"] = files;
  // And every model loaded, once (by id and path), in the order first loaded.
  json models = json::array();
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& e : r.experiments) {
    for (const auto& m : e.models) {
      if (seen.insert({m.id, m.path}).second) models.push_back(m);
    }
  }
  context["models"] = models;
  return {{"schema", kResultsSchemaName},
          {"schema_version", r.schema_version},
          {"context", context},
          {"experiments", experiments},
          {"timing", {{"total_seconds", r.total_seconds}}}};
}

Results results_from_json_unchecked(const json& j) {
  try {
    if (str(j, "schema") != kResultsSchemaName) bad("not an fplab results file");
    const json& version = field(j, "schema_version");
    if (!version.is_number_integer() || version.get<int>() != kResultsSchemaVersion) {
      bad("schema_version " + version.dump() + " is not supported (this fplab reads " +
          std::to_string(kResultsSchemaVersion) + ")");
    }
    Results r;
    // A foreign producer may leave out the context (it describes the machine).
    if (j.contains("context") && !j["context"].is_null()) {
      if (!j["context"].is_object()) bad("field 'context' is not an object");
      r.context = context_from(j["context"]);
    }
    const json& experiments = field(j, "experiments");
    if (!experiments.is_array()) bad("field 'experiments' is not an array");
    for (const auto& e : experiments) r.experiments.push_back(experiment_from(e));
    if (j.contains("timing") && j["timing"].is_object()) {
      r.total_seconds = j["timing"].value("total_seconds", 0.0);
    }
    if (j.contains("fingerprint") && !j["fingerprint"].is_string()) {
      bad("field 'fingerprint' is not a string");
    }
    return r;
  } catch (const json::exception& e) {
    bad(e.what());
  }
}

void write_results_json_without_fingerprint(const Results& r, const std::string& path) {
  write_file_atomically(path, to_json_without_fingerprint(r).dump(1) + "\n");
}

json parse_results_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
}

}  // namespace fplab
