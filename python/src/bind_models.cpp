// ember._C._models: the C++ GPT-2 tokenizer (include/ember/models/gpt2_tokenizer.h) that
// ember.models.GPT2Tokenizer wraps (glue only).
#include "bind.h"
#include "ember/models/gpt2_tokenizer.h"

namespace ember::python {

void bind_models(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("_models", "ember's model helpers");
  using models::GPT2Tokenizer;
  nb::class_<GPT2Tokenizer>(m, "GPT2Tokenizer")
      .def_static("from_files", &GPT2Tokenizer::from_files, nb::arg("vocab_json"), nb::arg("merges_txt"),
                  nb::arg("special_tokens"), nb::arg("unk_token"))
      .def("encode", &GPT2Tokenizer::encode, nb::arg("text"), nb::call_guard<nb::gil_scoped_release>())
      .def("decode", [](const GPT2Tokenizer& t, const std::vector<int64_t>& ids) {
             const std::string bytes = t.decode(ids);  // not always whole UTF-8 characters
             return nb::bytes(bytes.data(), bytes.size());
           }, nb::arg("ids"))
      .def_prop_ro("vocab_size", &GPT2Tokenizer::vocab_size);
  m.def("gpt2_pretokenize", &GPT2Tokenizer::pretokenize, nb::arg("text"));
  m.def("gpt2_byte_chars", &GPT2Tokenizer::byte_chars);
}

}  // namespace ember::python
