// ember._C._distributed: the stores, process groups and work handles of
// include/ember/distributed/ (glue only; ember/distributed/*.py builds torch.distributed's API
// on it). Built without Gloo, only is_available() (False) is there.
#include <nanobind/stl/chrono.h>
#include <nanobind/stl/shared_ptr.h>

#include "bind.h"

#ifdef EMBER_DISTRIBUTED
#include "ember/distributed/errors.h"
#include "ember/distributed/flat_param.h"
#include "ember/distributed/functional.h"
#include "ember/distributed/process_group.h"
#include "ember/distributed/reducer.h"
#include "ember/distributed/store.h"
#endif

namespace ember::python {

#ifdef EMBER_DISTRIBUTED
namespace {
using namespace ember::distributed;

Bytes to_bytes(nb::handle v) {
  if (nb::isinstance<nb::bytes>(v)) {
    nb::bytes b = nb::borrow<nb::bytes>(v);
    const auto* p = static_cast<const uint8_t*>(b.data());
    return Bytes(p, p + b.size());
  }
  if (nb::isinstance<nb::str>(v)) {
    const std::string s = nb::cast<std::string>(v);
    return Bytes(s.begin(), s.end());
  }
  throw TypeError(detail::cat("Store: expected a value of bytes or str, got ",
                              nb::cast<std::string>(nb::str(v.type().attr("__name__")))));
}
nb::bytes from_bytes(const Bytes& b) { return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

}  // namespace
#endif

void bind_distributed(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("_distributed", "ember's distributed core");
#ifndef EMBER_DISTRIBUTED
  m.def("is_available", [] { return false; });
#else
  m.def("is_available", [] { return gloo_available(); });
  // torch.distributed's error classes (translated in this order: the most derived first)
  static nb::exception<DistError> dist_error(m, "DistError", PyExc_RuntimeError);
  static nb::exception<DistBackendError> backend_error(m, "DistBackendError", dist_error.ptr());
  static nb::exception<DistNetworkError> network_error(m, "DistNetworkError", dist_error.ptr());
  static nb::exception<DistStoreError> store_error(m, "DistStoreError", dist_error.ptr());

  nb::class_<Store>(m, "Store")
      .def("set", [](Store& s, const std::string& key, nb::handle value) {
             const Bytes v = to_bytes(value);
             nb::gil_scoped_release unlocked;
             s.set(key, v);
           }, nb::arg("key"), nb::arg("value"))
      .def("get", [](Store& s, const std::string& key) {
             Bytes b;
             {
               nb::gil_scoped_release unlocked;
               b = s.get(key);
             }
             return from_bytes(b);
           })
      .def("add", &Store::add, nb::arg("key"), nb::arg("amount"), nb::call_guard<nb::gil_scoped_release>())
      .def("compare_set", [](Store& s, const std::string& key, nb::handle expected, nb::handle desired) {
             return from_bytes(s.compare_set(key, to_bytes(expected), to_bytes(desired)));
           })
      .def("check", &Store::check, nb::arg("keys"), nb::call_guard<nb::gil_scoped_release>())
      .def("wait", [](Store& s, const std::vector<std::string>& keys, std::optional<Millis> timeout) {
             nb::gil_scoped_release unlocked;
             if (timeout) s.wait(keys, *timeout);
             else s.wait(keys);
           }, nb::arg("keys"), nb::arg("timeout") = nb::none())
      .def("delete_key", &Store::delete_key, nb::arg("key"))
      .def("num_keys", &Store::num_keys)
      .def("set_timeout", &Store::set_timeout, nb::arg("timeout"))
      .def_prop_ro("timeout", &Store::timeout);

  nb::class_<TCPStore, Store>(m, "TCPStore")
      .def("__init__",
           [](TCPStore* self, const std::string& host, int port, std::optional<int> world_size, bool is_master,
              Millis timeout, bool wait_for_workers) {
             nb::gil_scoped_release unlocked;
             new (self) TCPStore(host, port, is_master, timeout, world_size.value_or(-1), wait_for_workers);
           },
           nb::arg("host_name"), nb::arg("port"), nb::arg("world_size") = nb::none(), nb::arg("is_master") = false,
           nb::arg("timeout") = kDefaultStoreTimeout, nb::arg("wait_for_workers") = true)
      .def_prop_ro("port", &TCPStore::port)
      .def_prop_ro("host", &TCPStore::host);
  nb::class_<FileStore, Store>(m, "FileStore")
      .def(nb::init<std::string, int, Millis>(), nb::arg("file_name"), nb::arg("world_size") = -1,
           nb::arg("timeout") = kDefaultStoreTimeout)
      .def_prop_ro("path", &FileStore::path);
  nb::class_<PrefixStore, Store>(m, "PrefixStore")
      .def(nb::init<std::string, std::shared_ptr<Store>>(), nb::arg("prefix"), nb::arg("store"))
      .def_prop_ro("underlying_store", &PrefixStore::base);

  nb::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::SUM)
      .value("AVG", ReduceOp::AVG)
      .value("PRODUCT", ReduceOp::PRODUCT)
      .value("MIN", ReduceOp::MIN)
      .value("MAX", ReduceOp::MAX);

  nb::class_<Work>(m, "Work")
      .def("wait", [](Work& w, std::optional<Millis> timeout) {
             nb::gil_scoped_release unlocked;
             return w.wait(timeout.value_or(Millis(0)));
           }, nb::arg("timeout") = nb::none())
      .def("is_completed", &Work::is_completed)
      .def("_source_rank", &Work::source_rank)
      .def("is_success", &Work::is_success)
      .def("result", [](Work& w) {
             nb::gil_scoped_release unlocked;
             return w.result();
           });

  using PG = ProcessGroup;
  auto released = nb::call_guard<nb::gil_scoped_release>();
  nb::class_<PG>(m, "ProcessGroup")
      .def("rank", &PG::rank)
      .def("size", &PG::size)
      .def("name", &PG::name)
      .def("set_name", &PG::set_name)
      .def("backend_name", &PG::backend_name)
      .def("all_reduce", &PG::all_reduce, released)
      .def("broadcast", &PG::broadcast, released)
      .def("reduce", &PG::reduce, released)
      .def("all_gather_into", &PG::all_gather_into, released)
      .def("gather_into", &PG::gather_into, released)
      .def("scatter_from", &PG::scatter_from, released)
      .def("reduce_scatter_from", &PG::reduce_scatter_from, released)
      .def("all_to_all", &PG::all_to_all, released)
      .def("all_to_all_v", &PG::all_to_all_v, released)
      .def("barrier", &PG::barrier, released)
      .def("send", &PG::send, released)
      .def("recv", &PG::recv, released);

  nb::class_<Reducer>(m, "Reducer")
      .def("__init__",
           [](Reducer* self, std::vector<std::pair<std::string, Tensor>> params, std::shared_ptr<ProcessGroup> pg,
              double bucket_cap_mb, bool find_unused, bool as_view) {
             ReducerOptions o;
             o.bucket_cap_mb = bucket_cap_mb;
             o.find_unused_parameters = find_unused;
             o.gradient_as_bucket_view = as_view;
             new (self) Reducer(std::move(params), std::move(pg), o);
           },
           nb::arg("named_params"), nb::arg("process_group"), nb::arg("bucket_cap_mb") = 25.0,
           nb::arg("find_unused_parameters") = false, nb::arg("gradient_as_bucket_view") = false)
      .def("prepare_for_forward", &Reducer::prepare_for_forward, released)
      .def("prepare_for_backward", &Reducer::prepare_for_backward, nb::arg("outputs"), released)
      .def("bucket_names", &Reducer::bucket_names);
  m.def("broadcast_coalesced",
        [](std::shared_ptr<ProcessGroup> pg, const std::vector<Tensor>& tensors, int root) {
          broadcast_coalesced(*pg, tensors, root);
        },
        nb::arg("process_group"), nb::arg("tensors"), nb::arg("root") = 0, nb::call_guard<nb::gil_scoped_release>());

  // FSDP's engine (ember.distributed.fsdp builds FullyShardedDataParallel on it)
  nb::class_<FlatParamHandle>(m, "FlatParamHandle")
      .def(nb::new_(  // held by a shared_ptr: the backward node shares the handle
           [](std::vector<std::pair<std::string, Tensor>> params, std::shared_ptr<ProcessGroup> pg,
              const std::string& strategy, std::optional<DType> param_dtype, std::optional<DType> reduce_dtype,
              bool offload_params, std::optional<Device> compute_device) {
             FlatParamOptions o;
             if (strategy == "FULL_SHARD") o.strategy = ShardingStrategy::FULL_SHARD;
             else if (strategy == "SHARD_GRAD_OP") o.strategy = ShardingStrategy::SHARD_GRAD_OP;
             else if (strategy == "NO_SHARD") o.strategy = ShardingStrategy::NO_SHARD;
             else throw ValueError("FSDP: unknown sharding_strategy " + strategy +
                                   " (expected FULL_SHARD, SHARD_GRAD_OP or NO_SHARD)");
             o.mixed_precision.param_dtype = param_dtype;
             o.mixed_precision.reduce_dtype = reduce_dtype;
             o.offload_params = offload_params;
             o.compute_device = compute_device;
             return std::make_shared<FlatParamHandle>(std::move(params), std::move(pg), o);
           }),
           nb::arg("named_params"), nb::arg("process_group"), nb::arg("sharding_strategy") = "FULL_SHARD",
           nb::arg("param_dtype") = nb::none(), nb::arg("reduce_dtype") = nb::none(), nb::arg("offload_params") = false,
           nb::arg("compute_device") = nb::none())
      .def_prop_ro("flat_param", &FlatParamHandle::flat_param)
      .def("set_flat_param", &FlatParamHandle::set_flat_param, nb::arg("param"))
      .def_prop_ro("names", &FlatParamHandle::names)
      .def_prop_ro("shapes", [](const FlatParamHandle& h) {
        std::vector<std::vector<int64_t>> out;
        for (const auto& s : h.shapes()) out.emplace_back(s.begin(), s.end());
        return out;
      })
      .def_prop_ro("numel", &FlatParamHandle::numel)
      .def_prop_ro("padded_numel", &FlatParamHandle::padded_numel)
      .def_prop_ro("shard_offset", &FlatParamHandle::shard_offset)
      .def_prop_ro("is_unsharded", &FlatParamHandle::is_unsharded)
      .def("unshard", &FlatParamHandle::unshard, released)
      .def("start_unshard", &FlatParamHandle::start_unshard, released)
      .def("wait_unshard", &FlatParamHandle::wait_unshard, released)
      .def("reshard", &FlatParamHandle::reshard, released)
      .def("views", &FlatParamHandle::views, released)
      .def("gather_full", &FlatParamHandle::gather_full, released)
      .def("split", &FlatParamHandle::split, nb::arg("full_flat"))
      .def("load_full", &FlatParamHandle::load_full, nb::arg("full_flat"), released);

  // differentiable collectives (ember.distributed.nn.functional)
  m.def("functional_all_reduce", &functional::all_reduce, nb::arg("input"), nb::arg("group"), nb::arg("op"), released);
  m.def("functional_all_gather", &functional::all_gather, nb::arg("input"), nb::arg("group"), released);
  m.def("functional_reduce_scatter", &functional::reduce_scatter, nb::arg("input"), nb::arg("group"), nb::arg("op"),
        released);
  m.def("functional_broadcast", &functional::broadcast, nb::arg("input"), nb::arg("src"), nb::arg("group"), released);
  m.def("backend_available", &process_group_backend_available, nb::arg("name"));
  m.def("new_process_group",
        [](const std::string& backend, std::shared_ptr<Store> store, int rank, int size, Millis timeout,
           std::string hostname, std::string interface) {
          GlooOptions o;
          o.timeout = timeout;
          o.hostname = std::move(hostname);
          o.interface = std::move(interface);
          return make_process_group(backend, std::move(store), rank, size, o);
        },
        nb::arg("backend"), nb::arg("store"), nb::arg("rank"), nb::arg("size"), nb::arg("timeout"),
        nb::arg("hostname") = "", nb::arg("interface") = "", nb::call_guard<nb::gil_scoped_release>());
  m.def("new_gloo_group",
        [](std::shared_ptr<Store> store, int rank, int size, Millis timeout, std::string hostname,
           std::string interface) {
          GlooOptions o;
          o.timeout = timeout;
          o.hostname = std::move(hostname);
          o.interface = std::move(interface);
          return make_gloo_process_group(std::move(store), rank, size, o);
        },
        nb::arg("store"), nb::arg("rank"), nb::arg("size"), nb::arg("timeout"), nb::arg("hostname") = "",
        nb::arg("interface") = "", nb::call_guard<nb::gil_scoped_release>());
#endif
}

}  // namespace ember::python
