#include "load/yaml_reader.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "load/input_file.h"

namespace ringsim {
namespace {

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "'" + printable(n.Scalar(), 80) + "'";
    default:
      return "an undefined value";
  }
}

// The 1-based line where a second document starts: a '---' after content, or content after a '...' that
// ended the first; 0 when the text holds one document. (yaml-cpp's LoadAll, which would count them, runs
// out of memory on some inputs the fuzzer found.)
int second_document_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  bool content = false, ended = false;  // content seen since the last marker; the document ended by '...'
  auto is = [&](const char* m) {
    return line.rfind(m, 0) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\r' || line[3] == '\t');
  };
  for (int n = 1; std::getline(in, line); ++n) {
    const bool start = is("---"), end = is("...");
    if (start && content) return n;
    if (end && content) ended = true;
    const auto first = line.find_first_not_of(" \t\r");
    const bool text_here = !start && !end && first != std::string::npos && line[first] != '#' && line[0] != '%';
    if (text_here && ended) return n;
    if (text_here || (start && line.find_first_not_of(" \t\r", 3) != std::string::npos)) content = true;
  }
  return 0;
}

YamlDocument parse(const std::string& text, const std::string& name) {
  YamlDocument doc;
  doc.file = name;
  // A second document would otherwise be dropped without a word.
  if (const int line = second_document_line(text))
    throw InputError({name, line, 1, ""},
                     "a second YAML document starts here; the file must hold one: remove the '---' (or '...') "
                     "line, or put the second document in a file of its own");
  try {
    doc.root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({name, e.mark.line + 1, e.mark.column + 1, ""}, "YAML syntax: " + e.msg);
  }
  return doc;
}

}  // namespace

YamlDocument YamlDocument::load_file(const std::string& path, const std::string& kind) {
  const std::string text = read_input_file(path, kMaxYamlBytes, kind);
  if (text.find('\0') != std::string::npos)
    throw InputError({path, 0, 0, ""}, "the file is binary (it contains NUL bytes), expected YAML text");
  return parse(text, path);
}

YamlDocument YamlDocument::load_string(const std::string& text, const std::string& name) { return parse(text, name); }

YamlField::YamlField(std::shared_ptr<const YamlDocument> doc, YAML::Node node, std::string path)
    : doc_(std::move(doc)), node_(std::move(node)), path_(std::move(path)) {}

YamlField YamlField::root(std::shared_ptr<const YamlDocument> doc) {
  YAML::Node n = doc->root;
  return YamlField(std::move(doc), n, "");
}

SourceLocation YamlField::location() const {
  // A value that came from --set (or sits below one) is reported against the command line.
  for (const auto& [p, origin] : doc_->overrides)
    if (path_ == p || path_.rfind(p + ".", 0) == 0) return {doc_->file, 0, 0, origin};
  const YAML::Mark m = node_.Mark();
  if (m.line < 0 || m.is_null()) return {doc_->file, 0, 0, ""};
  return {doc_->file, m.line + 1, m.column + 1, ""};
}

void YamlField::fail(const std::string& what) const {
  throw InputError(location(), (path_.empty() ? std::string() : path_ + ": ") + what);
}

void YamlField::require_map() const {
  if (!node_.IsMap()) fail("expected a mapping (key: value lines), got " + describe(node_));
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) YamlField(doc_, it->first, path_).fail("keys must be plain names");
    const std::string key = it->first.Scalar();
    if (!seen.insert(key).second) YamlField(doc_, it->first, join_path(path_, key)).fail("duplicate key");
  }
}

void YamlField::require_map(const std::vector<std::string>& allowed) const {
  require_map();
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      YamlField(doc_, it->first, join_path(path_, key))
          .fail("unknown key '" + key + "'" + suggestion_suffix(key, allowed));
  }
}

bool YamlField::has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }

std::optional<YamlField> YamlField::find(const std::string& key) const {
  if (!node_.IsMap()) return std::nullopt;
  const YAML::Node child = node_[key];
  if (!child.IsDefined()) return std::nullopt;
  return YamlField(doc_, child, join_path(path_, key));
}

YamlField YamlField::get(const std::string& key) const {
  if (auto f = find(key)) return *f;
  fail("missing required key '" + key + "'");
}

std::vector<std::pair<std::string, YamlField>> YamlField::entries() const {
  require_map();
  std::vector<std::pair<std::string, YamlField>> out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    out.emplace_back(key, YamlField(doc_, it->second, join_path(path_, key)));
  }
  return out;
}

std::vector<YamlField> YamlField::items() const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe(node_));
  std::vector<YamlField> out;
  std::size_t i = 0;
  for (const auto& n : node_) out.emplace_back(doc_, n, path_ + "[" + std::to_string(i++) + "]");
  return out;
}

void YamlField::require_scalar(const char* expected) const {
  if (!node_.IsScalar()) fail(std::string("expected ") + expected + ", got " + describe(node_));
}

std::string YamlField::str() const {
  require_scalar("a text value");
  return node_.Scalar();
}

std::string YamlField::choice(const std::vector<std::string>& allowed) const {
  require_scalar("one of the listed names");
  const std::string& v = node_.Scalar();
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  fail("unknown value '" + printable(v, 80) + "'" + suggestion_suffix(v, allowed));
}

std::int64_t YamlField::integer(std::int64_t min, std::int64_t max) const {
  require_scalar("a whole number");
  const std::string& s = node_.Scalar();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) fail("number '" + printable(s, 80) + "' is out of range");
  if (ec != std::errc() || p != s.data() + s.size()) fail("expected a whole number, got '" + printable(s, 80) + "'");
  if (v < min || v > max)
    fail("must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + printable(s, 80));
  return v;
}

double YamlField::number(double min, double max) const {
  require_scalar("a number");
  const std::string& s = node_.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    fail("expected a number, got '" + printable(s, 80) + "'");
  if (v < min || v > max) {
    std::ostringstream os;
    os << "must be between " << min << " and " << max << ", got " << s;
    fail(os.str());
  }
  return v;
}

double YamlField::positive_number() const {
  double v = number(-HUGE_VAL, HUGE_VAL);
  if (!(v > 0)) fail("must be greater than 0, got " + node_.Scalar());
  return v;
}

bool YamlField::boolean() const {
  require_scalar("true or false");
  const std::string& s = node_.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  fail("expected true or false, got '" + printable(s, 80) + "'");
}

double YamlField::quantity(Quantity kind) const {
  require_scalar(std::string(quantity_name(kind)).c_str());
  try {
    return parse_quantity(node_.Scalar(), kind);
  } catch (const UnitError& e) {
    fail(e.what());
  }
}

double YamlField::positive_quantity(Quantity kind) const {
  double v = quantity(kind);
  if (!(v > 0)) fail("must be greater than 0, got '" + printable(node_.Scalar(), 80) + "'");
  return v;
}

double YamlField::quantity_between(Quantity kind, double min, double max) const {
  const double v = quantity(kind);
  if (v < min || v > max)
    fail("must be between " + format_quantity(min, kind) + " and " + format_quantity(max, kind) + ", got '" +
         printable(node_.Scalar(), 80) + "'");
  return v;
}

double YamlField::nonnegative_quantity(Quantity kind) const {
  double v = quantity(kind);
  if (v < 0) fail("must not be negative, got '" + printable(node_.Scalar(), 80) + "'");
  return v;
}

}  // namespace ringsim
