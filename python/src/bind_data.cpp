// ember.utils.data's C++ side: the per-worker random stream. DataLoader workers are threads (see
// docs/ARCHITECTURE.md, Data); each runs its fetches inside `with _C._WorkerGenerator(seed):`, so
// ember's default generator on that thread is the worker's own (seeded base_seed + worker id)
// and random transforms differ per worker yet repeat with the same seed.
#include <memory>

#include "bind.h"

namespace ember::python {
namespace {

struct WorkerGenerator {
  Generator generator;
  std::unique_ptr<ThreadDefaultGeneratorGuard> guard;  // set between __enter__ and __exit__
};

}  // namespace

void bind_data(nb::module_& m) {
  nb::class_<WorkerGenerator>(m, "_WorkerGenerator")
      .def("__init__", [](WorkerGenerator* self, nb::int_ seed) {
        new (self) WorkerGenerator();
        // Seeds are any Python int: keep the low 64 bits, as Generator.manual_seed does.
        self->generator.manual_seed(uint64_t(PyLong_AsUnsignedLongLongMask(seed.ptr())));
      }, nb::arg("seed"))
      .def("__enter__", [](nb::handle self) {
        WorkerGenerator& w = *nb::inst_ptr<WorkerGenerator>(self);
        if (w.guard) throw nb::value_error("_WorkerGenerator is already entered");
        w.guard = std::make_unique<ThreadDefaultGeneratorGuard>(&w.generator);
        return nb::borrow(self);
      })
      .def("__exit__", [](WorkerGenerator& w, nb::args) {
        w.guard.reset();
        return false;
      })
      .def_prop_ro("generator", [](WorkerGenerator& w) -> Generator& { return w.generator; },
                   nb::rv_policy::reference_internal);
}

}  // namespace ember::python
