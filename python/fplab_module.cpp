// fplab._core: the library's own code behind the `fplab` Python package
// (python/fplab/__init__.py holds the public functions and their docs).
//
// Arrays come in as numpy arrays and are read in place: a C-contiguous
// float32 or float64 array is never copied (sum requires one, since its
// order is defined over memory; the element-wise functions take any layout
// through py::array::c_style, which copies only non-contiguous input).
// Errors: fplab::InputError and std::invalid_argument reach Python as
// ValueError with the library's one-line message; a wrong dtype is a
// TypeError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "io/array.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "matrixunits/mma.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"
#include "reductions/strategy.hpp"
#include "reports/array_diff.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"
#ifdef FPLAB_PYTHON_MODEL
#include "python/torch_kernels.hpp"
#endif

namespace py = pybind11;

namespace {

fplab::ElementType element_type_of(const py::array& x, const char* what) {
  const py::dtype dt = x.dtype();
  if (dt.kind() == 'f' && !dt.attr("isnative").cast<bool>()) {
    throw py::type_error(std::string(what) + ": dtype " + py::repr(dt).cast<std::string>() +
                         " is not in this machine's byte order; "
                         "x.astype(x.dtype.newbyteorder('=')) converts it exactly");
  }
  if (dt.is(py::dtype::of<float>())) return fplab::ElementType::float32;
  if (dt.is(py::dtype::of<double>())) return fplab::ElementType::float64;
  if (dt.kind() == 'f' && dt.itemsize() == 2) return fplab::ElementType::float16;
  throw py::type_error(std::string(what) + ": dtype " + dt.attr("name").cast<std::string>() +
                       " is not float16, float32 or float64");
}

void require_float32_or_64(const py::array& x, const char* what) {
  if (element_type_of(x, what) == fplab::ElementType::float16) {
    throw py::type_error(std::string(what) +
                         ": dtype float16 is not supported here; x.astype(np.float32) widens it "
                         "exactly");
  }
}

std::vector<std::size_t> shape_of(const py::array& x) {
  std::vector<std::size_t> s;
  for (py::ssize_t d = 0; d < x.ndim(); ++d) s.push_back(static_cast<std::size_t>(x.shape(d)));
  return s;
}

// A C-contiguous view of x (a copy only when x is not C-contiguous).
py::array contiguous(const py::array& x) { return py::array::ensure(x, py::array::c_style); }

fplab::ArrayView view_of(const py::array& x, fplab::ElementType t, std::string name) {
  fplab::ArrayView v;
  v.name = std::move(name);
  v.type = t;
  v.shape = shape_of(x);
  v.data = x.data();
  v.slot_bytes = fplab::element_bits(t) / 8;
  v.size = static_cast<std::size_t>(x.size());
  return v;
}

// rows: a C-contiguous 2-D array; one total per row, in the strategy's order.
template <class T>
py::array_t<T> sum_rows_typed(const py::array& rows, const fplab::Strategy& s) {
  const auto n_rows = static_cast<std::size_t>(rows.shape(0));
  const auto n = static_cast<std::size_t>(rows.shape(1));
  py::array_t<T> out(static_cast<py::ssize_t>(n_rows));
  const T* base = static_cast<const T*>(rows.data());
  T* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    for (std::size_t r = 0; r < n_rows; ++r) {
      o[r] = fplab::sum(s, std::span<const T>(base + r * n, n));
    }
  }
  return out;
}

py::array sum_rows(const py::array& rows, const std::string& strategy) {
  require_float32_or_64(rows, "fplab.sum");
  if (rows.ndim() != 2) throw py::value_error("fplab._core.sum_rows: a 2-D array of rows");
  if (!(rows.flags() & py::array::c_style)) {
    throw py::value_error(
        "fplab.sum: x is not C-contiguous, and a strategy's order is defined over memory "
        "(np.sum's own order changes with the layout); pass np.ascontiguousarray(x)");
  }
  const fplab::Strategy s = fplab::parse_strategy(strategy);
  if (rows.dtype().is(py::dtype::of<float>())) return sum_rows_typed<float>(rows, s);
  return sum_rows_typed<double>(rows, s);
}

template <class T>
py::array round_typed(const py::array& x, const fplab::RoundingOptions& o) {
  const py::array in = contiguous(x);
  py::array_t<T> out(in.request().shape);
  const auto n = static_cast<std::size_t>(in.size());
  fplab::round_all(std::span<const T>(static_cast<const T*>(in.data()), n),
                   std::span<T>(out.mutable_data(), n), o);
  return out;
}

py::array round_array(const py::array& x, const std::string& format, const std::string& mode,
                      std::uint64_t seed, bool via_float) {
  require_float32_or_64(x, "fplab.round");
  fplab::RoundingOptions o;
  o.format = fplab::parse_format(format);
  o.rounding = fplab::parse_rounding(mode);
  o.seed = seed;
  o.via_float = via_float;
  if (x.dtype().is(py::dtype::of<float>())) return round_typed<float>(x, o);
  return round_typed<double>(x, o);
}

void require_same(const py::array& a, const py::array& b, const char* what) {
  const auto ta = element_type_of(a, what);
  const auto tb = element_type_of(b, what);
  if (ta != tb) {
    throw py::type_error(std::string(what) + ": dtypes differ: " + std::string(fplab::name(ta)) +
                         " and " + std::string(fplab::name(tb)));
  }
  if (shape_of(a) != shape_of(b)) {
    throw py::value_error(std::string(what) + ": shapes differ: " +
                          py::repr(py::tuple(py::cast(shape_of(a)))).cast<std::string>() + " and " +
                          py::repr(py::tuple(py::cast(shape_of(b)))).cast<std::string>());
  }
}

py::array_t<std::uint64_t> ulp_diff(const py::array& a_in, const py::array& b_in) {
  require_same(a_in, b_in, "fplab.ulp_diff");
  const fplab::ElementType t = element_type_of(a_in, "fplab.ulp_diff");
  const py::array a = contiguous(a_in);
  const py::array b = contiguous(b_in);
  const auto va = view_of(a, t, "a");
  const auto vb = view_of(b, t, "b");
  py::array_t<std::uint64_t> out(a.request().shape);
  std::uint64_t* o = out.mutable_data();
  for (std::size_t i = 0; i < va.size; ++i) {
    const std::uint64_t x = va.bits(i);
    const std::uint64_t y = vb.bits(i);
    const bool nan_x = fplab::element_is_nan(t, x);
    if (nan_x != fplab::element_is_nan(t, y)) {
      fplab::ElementMismatch m;
      m.type = t;
      m.a_bits = x;
      m.b_bits = y;
      std::vector<std::size_t> idx(va.shape.size());
      std::size_t linear = i;
      for (std::size_t d = idx.size(); d-- > 0;) {
        idx[d] = linear % va.shape[d];
        linear /= va.shape[d];
      }
      m.index = idx;
      throw py::value_error("fplab.ulp_diff: element " + m.index_text() + " is NaN on one side (" +
                            m.a_text() + " vs " + m.b_text() +
                            "): no ulps count; fplab.diff lists NaN mismatches");
    }
    o[i] = nan_x ? 0 : fplab::nulp_count(t, x, y);
  }
  return out;
}

py::dict element_dict(const fplab::ElementMismatch& m) {
  py::dict d;
  d["kind"] = std::string(fplab::name(m.kind));
  d["index"] = py::tuple(py::cast(m.index));
  d["a_bits"] = m.a_bits;
  d["b_bits"] = m.b_bits;
  d["a_text"] = m.a_text();
  d["b_text"] = m.b_text();
  d["ulps"] = m.ulps;
  d["relative"] = m.relative;
  d["absolute"] = m.absolute;
  return d;
}

py::dict diff(const py::array& a_in, const py::array& b_in, std::optional<std::uint64_t> ulps,
              std::optional<double> rtol, std::optional<double> atol, std::size_t limit) {
  require_same(a_in, b_in, "fplab.diff");
  const fplab::ElementType t = element_type_of(a_in, "fplab.diff");
  const py::array a = contiguous(a_in);
  const py::array b = contiguous(b_in);
  fplab::ArrayTolerance tol;
  tol.max_ulps = ulps;
  tol.max_relative = rtol;
  tol.max_absolute = atol;
  fplab::ArrayDiffReport report;
  report.file_a = "a";
  report.file_b = "b";
  report.tolerance = tol;
  {
    py::gil_scoped_release release;
    report.tensors.push_back(
        fplab::compare_arrays(view_of(a, t, "x"), view_of(b, t, "x"), tol, limit));
  }
  const fplab::TensorDiff& td = report.tensors[0];
  py::dict d;
  d["dtype"] = std::string(fplab::name(t));
  d["elements"] = td.elements;
  d["bit_identical"] = td.bit_identical;
  d["beyond_tolerance"] = td.beyond_tolerance;
  d["max_ulps"] = td.max_ulps;
  d["max_relative"] = td.max_relative;
  d["nan_mismatches"] = td.nan_mismatches;
  d["nan_payloads"] = td.nan_payloads;
  d["inf_mismatches"] = td.inf_mismatches;
  d["signed_zero_mismatches"] = td.signed_zero_mismatches;
  d["tolerance"] = tol.describe();
  py::list drifted;
  for (const auto& m : td.drifted) drifted.append(element_dict(m));
  d["drifted"] = drifted;
  d["text"] = fplab::format_array_diff(report, limit);
  d["markdown"] = fplab::format_array_diff_markdown(report, limit);
  d["json"] = fplab::array_diff_to_json(report, limit).dump();
  return d;
}

// (path, type, payload): floats as their bit pattern, so nothing is rounded.
py::tuple load_results(const std::string& path) {
  const fplab::Results r = fplab::read_results_json(path);
  py::list values;
  for (const auto& f : fplab::flatten(r)) {
    const auto type = std::string(fplab::name(f.value.type()));
    switch (f.value.type()) {
      case fplab::ValueType::float32:
        values.append(py::make_tuple(f.path, type, std::bit_cast<std::uint32_t>(f.value.as_f32())));
        break;
      case fplab::ValueType::float64:
        values.append(py::make_tuple(f.path, type, std::bit_cast<std::uint64_t>(f.value.as_f64())));
        break;
      case fplab::ValueType::integer:
        values.append(py::make_tuple(f.path, type, f.value.as_int()));
        break;
      case fplab::ValueType::text:
        values.append(py::make_tuple(f.path, type, f.value.as_text()));
        break;
    }
  }
  return py::make_tuple(fplab::to_json(r).dump(), values);
}

// Every array of a file read_arrays reads (.pt, .safetensors, .npy, text),
// in the file's order, as (name, dtype name, shape, bits as uint64).
py::list load_arrays(const std::string& path) {
  py::list out;
  for (const auto& a : fplab::read_arrays(path)) {
    py::array_t<std::uint64_t> bits(static_cast<py::ssize_t>(a.bits.size()));
    std::copy(a.bits.begin(), a.bits.end(), bits.mutable_data());
    out.append(py::make_tuple(a.name, std::string(fplab::name(a.type)), py::cast(a.shape), bits));
  }
  return out;
}

// D = A B + C on a matrix unit (matrixunits/mma.hpp): a, b, c are C-contiguous
// 2-D float32 (fplab.mma widens float16); D's bits as uint32, or uint16 for
// an f16 accumulator, for fplab.mma to view as float32 / float16.
py::array mma_bits(const std::string& spec_text, const py::array_t<float, py::array::c_style>& a,
                   const py::array_t<float, py::array::c_style>& b,
                   const py::array_t<float, py::array::c_style>& c,
                   const std::optional<py::array_t<float, py::array::c_style>>& scale_a,
                   const std::optional<py::array_t<float, py::array::c_style>>& scale_b) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2) {
    throw std::invalid_argument("fplab.mma: A, B and C must be 2-D");
  }
  const fplab::MmaShape shape{static_cast<std::size_t>(a.shape(0)),
                              static_cast<std::size_t>(b.shape(1)),
                              static_cast<std::size_t>(a.shape(1))};
  if (static_cast<std::size_t>(b.shape(0)) != shape.k ||
      static_cast<std::size_t>(c.shape(0)) != shape.m ||
      static_cast<std::size_t>(c.shape(1)) != shape.n) {
    throw std::invalid_argument("fplab.mma: A, B and C must be M x K, K x N and M x N");
  }
  const fplab::MmaSpec spec = fplab::parse_mma_spec(spec_text);
  const auto span = [](const py::array_t<float, py::array::c_style>& x) {
    return std::span<const float>(x.data(), static_cast<std::size_t>(x.size()));
  };
  if (scale_a.has_value() != scale_b.has_value()) {
    throw std::invalid_argument("fplab.mma: give both scale_a and scale_b, or neither");
  }
  const fplab::Array d = scale_a.has_value() ? fplab::mma(spec, shape, span(a), span(b), span(c),
                                                          span(*scale_a), span(*scale_b))
                                             : fplab::mma(spec, shape, span(a), span(b), span(c));
  const std::vector<py::ssize_t> dims{static_cast<py::ssize_t>(shape.m),
                                      static_cast<py::ssize_t>(shape.n)};
  const bool half = d.type == fplab::ElementType::float16;
  py::array out(half ? py::dtype::of<std::uint16_t>() : py::dtype::of<std::uint32_t>(), dims);
  if (half) {
    std::copy(d.bits.begin(), d.bits.end(), static_cast<std::uint16_t*>(out.mutable_data()));
  } else {
    std::copy(d.bits.begin(), d.bits.end(), static_cast<std::uint32_t*>(out.mutable_data()));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "fplab's C++ library (use the fplab package, not this module)";
  m.attr("__version__") = fplab::build::kVersion;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fplab::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("sum_rows", &sum_rows, py::arg("rows"), py::arg("strategy"));
  m.def("round", &round_array, py::arg("x"), py::arg("format"), py::arg("mode"), py::arg("seed"),
        py::arg("via_float"));
  m.def("ulp_diff", &ulp_diff, py::arg("a"), py::arg("b"));
  m.def("diff", &diff, py::arg("a"), py::arg("b"), py::arg("ulps"), py::arg("rtol"),
        py::arg("atol"), py::arg("limit"));
  m.def("load_results", &load_results, py::arg("path"));
  m.def("load_arrays", &load_arrays, py::arg("path"));
  m.def("mma", &mma_bits, py::arg("spec"), py::arg("a"), py::arg("b"), py::arg("c"),
        py::arg("scale_a") = py::none(), py::arg("scale_b") = py::none());
  m.def("strategy_names", [] {
    std::vector<std::string> out;
    for (const auto& s : fplab::strategy_catalogue()) out.emplace_back(s.spelling);
    return out;
  });
  m.def("default_strategies", [] {
    std::vector<std::string> out;
    for (const auto& s : fplab::default_strategies()) out.push_back(s.name());
    return out;
  });
  m.def("format_names", [] {
    std::vector<std::string> out;
    for (const auto& f : fplab::named_formats()) out.emplace_back(f.name);
    return out;
  });
  m.def("to_hex", [](double x) { return fplab::to_hex(x); });
  m.def("to_hex_f32", [](float x) { return fplab::to_hex(x); });
#ifdef FPLAB_PYTHON_MODEL
  bind_torch_kernels(m);
  m.attr("has_model") = true;
#else
  m.attr("has_model") = false;
#endif
}
