// Checked access to a YAML document: every read knows its key path and source position, so a wrong
// value is reported as "file:line:col: error: cluster.nodes: expected ...". Unknown and duplicate keys
// are errors. Used by the catalog and the scenario loaders.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load/input_error.h"
#include "load/units.h"

namespace ringsim {

// A parsed YAML file plus where each overridden key came from (--set).
struct YamlDocument {
  std::string file;
  YAML::Node root;
  std::map<std::string, std::string> overrides;  // dotted key path -> "--set path=value"

  // Parses `path`; syntax errors become InputError with the parser's line and column. What is not a
  // regular file, files over kMaxYamlBytes, binary files and a second document are refused; `kind` names
  // what the file was expected to be in those errors ("scenario").
  static YamlDocument load_file(const std::string& path, const std::string& kind = "YAML");
  static constexpr std::size_t kMaxYamlBytes = 4u << 20;
  static YamlDocument load_string(const std::string& text, const std::string& name);
};

class YamlField {
 public:
  YamlField(std::shared_ptr<const YamlDocument> doc, YAML::Node node, std::string path);
  static YamlField root(std::shared_ptr<const YamlDocument> doc);

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }
  SourceLocation location() const;
  [[noreturn]] void fail(const std::string& what) const;  // "path: what"

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // Mappings. `require_map` also rejects duplicate keys and keys not in `allowed`.
  void require_map(const std::vector<std::string>& allowed) const;
  void require_map() const;  // any keys (e.g. catalogs keyed by name); still rejects duplicates
  bool has(const std::string& key) const;
  YamlField get(const std::string& key) const;  // error when missing
  std::optional<YamlField> find(const std::string& key) const;
  std::vector<std::pair<std::string, YamlField>> entries() const;  // document order

  // Sequences.
  std::vector<YamlField> items() const;

  // Scalars, each with its expectation spelled out in the error.
  std::string str() const;
  std::string choice(const std::vector<std::string>& allowed) const;
  std::int64_t integer(std::int64_t min, std::int64_t max) const;
  double number(double min, double max) const;
  double positive_number() const;
  bool boolean() const;
  double quantity(Quantity kind) const;           // any value, incl. 0 and negatives
  double positive_quantity(Quantity kind) const;  // > 0
  // Between min and max (in the base unit), the bounds said in the kind's units: "at least 1 B/s".
  double quantity_between(Quantity kind, double min, double max) const;
  double nonnegative_quantity(Quantity kind) const;

 private:
  void require_scalar(const char* expected) const;
  std::shared_ptr<const YamlDocument> doc_;
  YAML::Node node_;
  std::string path_;
};

}  // namespace ringsim
