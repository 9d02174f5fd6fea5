// Figures the catalog assumes rather than measures (topologies/uncertain.yaml): each names a catalog figure,
// the range public evidence leaves it, and where that range comes from. Prediction bands sample them, and a
// calibration from runs fits them.
#pragma once

#include <string>
#include <vector>

#include "load/overlay.h"
#include "load/scenario.h"
#include "load/units.h"

namespace ringsim {

// The figures a parameter may name: empty where `figure` is one, else what is wrong with it.
std::string check_figure(const Catalog& catalog, const std::string& figure);

// The unit of a figure's values: bandwidth, time, or none (fractions, coefficients).
std::optional<Quantity> figure_quantity(const std::string& figure);

// The point at u (0..1) along a parameter's range: log-uniform where both ends are positive, else linear.
double value_at(const UncertainParameter& p, double u);

// The overlay that sets the parameter's figure to `x` (a value, or a factor of the catalog's figure).
CatalogOverlay uncertain_overlay(const Catalog& catalog, const UncertainParameter& p, double x);

// Whether the parameter's figure takes part in the scenario's prediction: its library, a path it uses
// (inside a node with several GPUs, its fabric with several nodes; across the sockets, GPUs of the library's
// collectives on two sockets without peer access between them), its SKU's Ethernet, several ranks.
bool applies_to(const UncertainParameter& p, const Scenario& s, const Catalog& catalog);

// Whether an overlay (a calibration) sets the parameter's figure, which then is no longer uncertain.
bool overlay_sets(const Catalog& catalog, const CatalogOverlay& overlay, const UncertainParameter& p);

}  // namespace ringsim
