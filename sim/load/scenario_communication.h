// Internal to the scenario loader (scenario.cpp): the communication section's parsers and checks
// (scenario_communication.cpp), which parse() calls in order once the cluster and model sections are read.
#pragma once

#include <optional>

#include "load/catalog.h"
#include "load/scenario.h"
#include "load/yaml_reader.h"

namespace ringsim::scenario_detail {

void parse_strategy(const YamlField& co, Scenario& s);
void check_nvls(const YamlField& co, const Catalog& catalog, const Scenario& s);
void check_ring_only(const YamlField& co, const Catalog& catalog, const Scenario& s);
void check_auto(const YamlField& co, const Catalog& catalog, const Scenario& s);
void parse_protocol(const YamlField& co, const Catalog& catalog, Scenario& s);
void parse_parameter_server_keys(const YamlField& co, Scenario& s);
int parse_buffers(const YamlField& co, Scenario& s);
void parse_parameter_server_count(const YamlField& co, Scenario& s);
void default_channels(const Catalog& catalog, const SkuSpec& sku, Scenario& s);
// communication.library_version, and the strategy the library's release runs by default where the scenario
// names none (`co`: the section, if the scenario has one).
void library_defaults(const std::optional<YamlField>& co, const Catalog& catalog, Scenario& s);
// framework fsdp: what its one iteration runs (NCCL's all-gather and reduce-scatter, their own streams, one
// micro-batch a step) once the strategy is resolved, and hybrid_shard's shard_group; `root`: the scenario.
void check_sharded(const YamlField& root, Scenario& s);

}  // namespace ringsim::scenario_detail
