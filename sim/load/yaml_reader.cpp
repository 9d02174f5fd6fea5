#include "load/yaml_reader.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

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
      return "'" + n.Scalar() + "'";
    default:
      return "an undefined value";
  }
}

YamlDocument parse(const std::string& text, const std::string& name) {
  YamlDocument doc;
  doc.file = name;
  try {
    doc.root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({name, e.mark.line + 1, e.mark.column + 1, ""}, "YAML syntax: " + e.msg);
  }
  return doc;
}

}  // namespace

YamlDocument YamlDocument::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0, ""}, "cannot open file for reading");
  // Read in blocks and stop past the limit (a device such as /dev/zero has no size to check first).
  std::string text;
  char block[1 << 16];
  while (text.size() <= kMaxYamlBytes && (in.read(block, sizeof block) || in.gcount() > 0))
    text.append(block, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxYamlBytes)
    throw InputError({path, 0, 0, ""}, "the file is larger than " + std::to_string(kMaxYamlBytes >> 20) +
                                           " MiB, the most a scenario or catalog file may be (the bundled ones "
                                           "are under 32 KiB); is it the right file?");
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
  fail("unknown value '" + v + "'" + suggestion_suffix(v, allowed));
}

std::int64_t YamlField::integer(std::int64_t min, std::int64_t max) const {
  require_scalar("a whole number");
  const std::string& s = node_.Scalar();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) fail("number '" + s + "' is out of range");
  if (ec != std::errc() || p != s.data() + s.size()) fail("expected a whole number, got '" + s + "'");
  if (v < min || v > max) fail("must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + s);
  return v;
}

double YamlField::number(double min, double max) const {
  require_scalar("a number");
  const std::string& s = node_.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) fail("expected a number, got '" + s + "'");
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
  fail("expected true or false, got '" + s + "'");
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
  if (!(v > 0)) fail("must be greater than 0, got '" + node_.Scalar() + "'");
  return v;
}

double YamlField::quantity_between(Quantity kind, double min, double max) const {
  const double v = quantity(kind);
  if (v < min || v > max)
    fail("must be between " + format_quantity(min, kind) + " and " + format_quantity(max, kind) + ", got '" +
         node_.Scalar() + "'");
  return v;
}

double YamlField::nonnegative_quantity(Quantity kind) const {
  double v = quantity(kind);
  if (v < 0) fail("must not be negative, got '" + node_.Scalar() + "'");
  return v;
}

}  // namespace ringsim
