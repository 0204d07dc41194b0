// Compiled graphs renumbered at new sizes (ember/compile/compiled_template.h).
#include "ember/compile/compiled_template.h"

#include "ember/core/errors.h"
#include "ember/export.h"

namespace ember::compiler {

namespace {
std::shared_ptr<const SymbolicShapes> parsed(const std::string& sites_json) {
  auto sites = exporting::detail::parse_symbolic_json(sites_json);
  EMBER_CHECK_VALUE(sites, "ember.compile: a compiled template needs symbolic sizes");
  return sites;
}
}  // namespace

CompiledTemplate::CompiledTemplate(std::shared_ptr<const CompiledGraph> base, const std::string& sites_json)
    : CompiledTemplate(std::move(base), parsed(sites_json)) {}

CompiledTemplate::CompiledTemplate(std::shared_ptr<const CompiledGraph> base, std::shared_ptr<const SymbolicShapes> sites)
    : base_(std::move(base)) {
  EMBER_CHECK_VALUE(base_ && sites, "ember.compile: a compiled template needs a compiled graph and symbolic sizes");
  auto own = std::make_shared<SymbolicShapes>(*sites);
  own->caller_binds = true;  // (the dims come from the caller: a fitted graph's binding, a program's inputs)
  own->check(base_->graph());
  sites_ = std::move(own);
  // every kernel's sizes must be read back from the graph: fail here, not at a call
  CompiledGraph::renumbered(base_, sites_, sites_->example);
}

std::shared_ptr<CompiledGraph> CompiledTemplate::at(const std::vector<int64_t>& dims) const {
  EMBER_CHECK_VALUE(dims.size() == sites_->names.size(), "ember.compile: a compiled template takes ",
                    sites_->names.size(), " sizes, got ", dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    EMBER_CHECK_VALUE(dims[i] >= sites_->min[i] && (sites_->max[i] == -1 || dims[i] <= sites_->max[i]),
                      "ember.compile: size ", sites_->names[i], " = ", dims[i], " is outside the fitted range [",
                      sites_->min[i], ", ", sites_->max[i], "]");
  const Graph& g = base_->graph();
  for (const auto& s : sites_->sites)
    if (s.where == SymSite::Size && g.values[size_t(s.item)].sizes[size_t(s.index)] >= 2 && s.poly.eval(dims) < 2)
      return nullptr;
  return CompiledGraph::renumbered(base_, sites_, dims);
}

}  // namespace ember::compiler
