#include "reports/report_document.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports/argument.hpp"
#include "reports/ranges.hpp"

namespace fplab::report {

namespace {

// A list parameter's value as a reader takes it in: integer runs as ranges
// (reports/ranges.hpp), items separated by ", " so the line wraps.
std::string param_value(const ParamRecord& p) {
  if (p.type == "int_list") {
    if (const auto v = parse_int_list(p.value)) return compact_list(*v);
  }
  if (p.type.size() > 5 && p.type.compare(p.type.size() - 5, 5, "_list") == 0) {
    std::string out;
    for (char ch : p.value) out += ch == ',' ? std::string(", ") : std::string(1, ch);
    return out;
  }
  return p.value;
}

Spans params_spans(const ExperimentRecord& e) {
  Spans out{text("Parameters: ")};
  for (std::size_t i = 0; i < e.parameters.size(); ++i) {
    const auto& p = e.parameters[i];
    out.push_back(text((i == 0 ? "" : "; ") + p.name + " = "));
    out.push_back(code(param_value(p)));
  }
  out.push_back(text("."));
  return out;
}

// ---- the walk ------------------------------------------------------------------

void context_blocks(const Results& r, Document& d) {
  const auto& c = r.context;
  // A results file another program wrote (docs/drift.md's minimum) has no
  // context: say so rather than print a line of empty fields.
  if (c.fplab_version.empty() && c.compiler_id.empty() && c.compiler_version.empty() &&
      c.build_type.empty() && c.fp_flags.empty() && c.git_commit.empty()) {
    d.blocks.emplace_back(Paragraph{
        {text("No build context in this results file (written by another program).")}, "context"});
    d.blocks.emplace_back(
        Paragraph{{text("Fingerprint of the results: "), code(fingerprint(r))}, "context"});
    return;
  }
  Spans line{
      text("fplab " + c.fplab_version + ", " + c.compiler_id + " " + c.compiler_version + " (" +
           c.build_type + ", "),
      code(c.fp_flags),
      text("), " + c.openmp_runtime + " with " + std::to_string(c.openmp_max_threads) +
           " threads, " + c.cpu_model + ", git " + c.git_commit + (c.git_dirty ? " (dirty)" : ""))};
  if (c.quick) {
    line.push_back(text(". "));
    line.push_back(strong("Quick run"));
    line.push_back(text(" (small sizes)."));
  } else {
    line.push_back(text("."));
  }
  d.blocks.emplace_back(Paragraph{std::move(line), "context"});
  d.blocks.emplace_back(
      Paragraph{{text("Fingerprint of the results: "), code(fingerprint(r))}, "context"});
}

void verdict_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& v : e.verdicts) {
    d.blocks.emplace_back(
        VerdictBlock{{strong(v.claim), text(" (" + v.source + "): " + v.claim_text)},
                     {{text("claimed: " + v.claimed)},
                      {text("ours: " + v.ours)},
                      {text("verdict: "), verdict(v.status), text(". " + v.reason)}}});
  }
}

void caption_and_csv(const ExperimentRecord& e, const Table& t, Spans lead, Document& d) {
  if (!t.caption.empty()) lead.push_back(text(t.caption));
  if (!lead.empty()) d.blocks.emplace_back(Paragraph{std::move(lead), "caption"});
  d.blocks.emplace_back(Paragraph{{text("CSV: "), link("csv/" + table_file(e, t))}, "caption"});
}

void table_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& t : e.tables) {
    d.blocks.emplace_back(Heading{3, {text(t.title)}, {}});
    Spans lead;
    if (t.in_report) {
      d.blocks.emplace_back(DataTable{&t, t.rows.size() > kCollapsedRows});
    } else {
      lead.push_back(text(std::to_string(t.rows.size()) + " rows, in the CSV file. "));
    }
    caption_and_csv(e, t, std::move(lead), d);
  }
}

void figure_blocks(const ExperimentRecord& e, bool plots, Document& d) {
  for (const auto& f : e.figures) {
    if (is_headline(e, f) || is_lead_figure(e, f)) {
      d.blocks.emplace_back(Heading{3, {text(f.title)}, {}});
      d.blocks.emplace_back(Paragraph{{text("Shown as the report's first figure, in "),
                                       section("argument", "The argument"), text(".")},
                                      "caption"});
      continue;
    }
    d.blocks.emplace_back(Heading{3, {text(f.title)}, {}});
    FigureBlock fig{{}, f.title, {}};
    if (plots) {
      fig.path = "figures/" + figure_file(e, f);
    } else {
      fig.missing =
          "(plot not rendered: gnuplot was not available; data in table `" + f.table + "`)";
    }
    d.blocks.emplace_back(std::move(fig));
    if (!f.caption.empty()) d.blocks.emplace_back(Paragraph{{text(f.caption)}, "caption"});
  }
}

void measurement_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& t : e.measurements) {
    d.blocks.emplace_back(Heading{3, {text(t.title + " (measured; varies from run to run)")}, {}});
    d.blocks.emplace_back(DataTable{&t});
    caption_and_csv(e, t, {}, d);
  }
}

void experiment_blocks(const ExperimentRecord& e, bool plots, Document& d) {
  d.blocks.emplace_back(Heading{2, {text(e.title + " ("), code(e.id), text(")")}, e.id});
  if (!e.description.empty()) d.blocks.emplace_back(Paragraph{{text(e.description)}, {}});
  d.blocks.emplace_back(Paragraph{params_spans(e), "context"});
  verdict_blocks(e, d);
  table_blocks(e, d);
  figure_blocks(e, plots, d);
  measurement_blocks(e, d);
  if (!e.notes.empty()) {
    Bullets notes;
    for (const auto& n : e.notes) notes.items.push_back({text(n)});
    d.blocks.emplace_back(std::move(notes));
  }
  // A results file written by another program has no timing: no line of 0.00 s.
  if (e.wall_seconds > 0) {
    d.blocks.emplace_back(Paragraph{
        {text("Wall time: " + fmt::format("{:.2f}", e.wall_seconds) + " s.")}, "context"});
  }
}

// The text of spans without markup (a heading's words for the contents).
std::string md_spans_plain(const Spans& spans) {
  std::string out;
  for (const auto& s : spans) out += s.text;
  return out;
}

}  // namespace

std::string figure_file(const ExperimentRecord& e, const Figure& f) {
  return e.id + "-" + f.id + ".svg";
}

std::string table_file(const ExperimentRecord& e, const Table& t) {
  return e.id + "-" + t.id + ".csv";
}

Span text(std::string s) { return {Span::Kind::text, std::move(s), {}, {}}; }
Span code(std::string s) { return {Span::Kind::code, std::move(s), {}, {}}; }
Span strong(std::string s) { return {Span::Kind::strong, std::move(s), {}, {}}; }
Span link(std::string s) {
  std::string href = s;
  return {Span::Kind::link, std::move(s), std::move(href), {}};
}
Span link(std::string label, std::string href) {
  return {Span::Kind::link, std::move(label), std::move(href), {}};
}
Span section(const std::string& id, const std::string& label) {
  return {Span::Kind::section, label.empty() ? id : label, id, {}};
}
Span verdict(Status s) { return {Span::Kind::verdict, std::string(name(s)), {}, s}; }
Span mark(std::string s) { return {Span::Kind::mark, std::move(s), {}, {}}; }

std::vector<std::string> claim_sources(const Results& r) {
  std::vector<std::string> out;
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      if (std::find(out.begin(), out.end(), v.source) == out.end()) out.push_back(v.source);
    }
  }
  return out;
}

Grid claims_grid(const Results& r, const std::vector<std::string>& references) {
  Grid g{{"claim", "experiment", "claimed", "ours", "verdict"}, {}};
  if (!references.empty()) g.header.insert(g.header.begin() + 1, "source");
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      std::vector<Spans> row{
          {text(v.claim)}, {section(e.id)}, {text(v.claimed)}, {text(v.ours)}, {verdict(v.status)}};
      const auto ref = std::find(references.begin(), references.end(), v.source);
      if (ref != references.end()) {
        const auto n = std::to_string(ref - references.begin() + 1);
        row.insert(row.begin() + 1, Spans{section("ref-" + n, "[" + n + "]")});
      }
      g.rows.push_back(std::move(row));
    }
    // A claim the experiment covers but gave no verdict on in this run.
    for (const auto& c : e.claims) {
      const bool judged = std::any_of(e.verdicts.begin(), e.verdicts.end(),
                                      [&](const Verdict& v) { return v.claim == c.id; });
      if (judged) continue;
      std::vector<Spans> row{
          {text(c.id)}, {section(e.id)}, {text(c.claimed)}, {text("")}, {text("not run")}};
      if (!references.empty()) row.insert(row.begin() + 1, Spans{text("")});
      g.rows.push_back(std::move(row));
    }
  }
  return g;
}

// What the verdict words mean, said once above the claims table.
Bullets verdict_legend() {
  Bullets b;
  b.items.push_back({verdict(Status::reproduced),
                     text(": our figure, from the claim's recipe, agrees with the claimed one.")});
  b.items.push_back(
      {verdict(Status::differs),
       text(": ours is not the claimed figure, for one of two reasons, which the verdict's reason "
            "names: the mechanism is shown but the figure is not comparable (another model, "
            "another machine: B6's batch-dependent answers on a 0.87M-parameter model on a "
            "CPU), or the claim is wrong as stated (a misquote or a false figure, with the "
            "evidence).")});
  b.items.push_back(
      {verdict(Status::too_little_data),
       text(" for a verdict: the run is too small to confirm or refute the claim (a --quick "
            "size: too few steps, prompts or batch sizes for the claimed figure to show); each "
            "claim's rule is in docs/claims.md.")});
  b.items.push_back(
      {text("not run"), text(": an experiment that covers the claim is in this run but gave no "
                             "verdict on it (claims of experiments not run are not listed).")});
  return b;
}

Document build_document(const Results& r, bool plots) {
  Document d;
  d.blocks.emplace_back(Heading{1, {text("fplab report")}, {}});
  context_blocks(r, d);
  const std::vector<std::string> sources = claim_sources(r);
  argument_blocks(r, plots, d);

  Bullets contents;
  for (const auto& b : d.blocks) {
    if (const auto* h = std::get_if<Heading>(&b); h != nullptr && h->level == 2)
      contents.items.push_back({section(h->anchor, md_spans_plain(h->text))});
  }
  if (!sources.empty()) contents.items.push_back({section("references", "References")});
  contents.items.push_back({section("claims", "Claims")});
  for (const auto& e : r.experiments)
    contents.items.push_back({section(e.id, e.title), text(" ("), code(e.id), text(")")});
  d.blocks.emplace_back(Heading{2, {text("Contents")}, "contents"});
  d.blocks.emplace_back(std::move(contents));

  if (!sources.empty()) {
    d.blocks.emplace_back(Heading{2, {text("References")}, "references"});
    d.blocks.emplace_back(Paragraph{
        {text("The published claims this report checks, by source; each claim in the table "
              "below links to its source here.")},
        {}});
    NumberedList refs;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      Spans item = reference_spans(sources[i]);
      std::string ids;
      for (const auto& e : r.experiments) {
        for (const auto& v : e.verdicts) {
          if (v.source == sources[i] && ids.find(v.claim) == std::string::npos)
            ids += (ids.empty() ? "" : ", ") + v.claim;
        }
      }
      item.push_back(text(" (claims " + ids + ")"));
      refs.items.push_back(std::move(item));
      refs.anchors.push_back("ref-" + std::to_string(i + 1));
    }
    d.blocks.emplace_back(std::move(refs));
  }
  d.blocks.emplace_back(Heading{2, {text("Claims")}, "claims"});
  d.blocks.emplace_back(Paragraph{{text("The verdict words:")}, {}});
  d.blocks.emplace_back(verdict_legend());
  d.blocks.emplace_back(claims_grid(r, sources));
  for (const auto& e : r.experiments) experiment_blocks(e, plots, d);
  return d;
}

}  // namespace fplab::report
