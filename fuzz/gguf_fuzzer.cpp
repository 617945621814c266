// The GGUF reader and loader (checkpoints/gguf.hpp, checkpoint.hpp): any
// bytes as a .gguf file, checked against the op list's tensors
// (model/checkpoint_tensors.hpp). A file accepted must hold exactly the op
// list's tensors, each with its shape and inside the file or fplab's own
// buffers; its tokenizer metadata, when accepted, must decode every id it
// encodes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/gguf.hpp"
#include "checkpoints/mapped_file.hpp"
#include "checkpoints/tokenizer_bpe.hpp"
#include "fuzz/fuzz_support.hpp"
#include "model/checkpoint_tensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ck = fplab::checkpoints;
  const auto path = fplab::fuzz::scratch_file("gguf", data, size);
  fplab::fuzz::expect_clean([&] {
    const auto c =
        ck::Checkpoint::open(ck::ModelLocation{ck::ModelLocation::Kind::gguf_file, path, "fuzz"},
                             fplab::model::checkpoint_tensors);
    const auto expected = fplab::model::checkpoint_tensors(c.config(), "fuzz");
    fplab::fuzz::require(expected.size() == c.tensors().size());
    volatile std::uint8_t sink = 0;
    for (const auto& e : expected) {
      const auto* t = c.find(e.hf_name);
      fplab::fuzz::require(t != nullptr && t->shape == e.shape);
      // Touch the first and last byte: ASan reports a view outside the mapping.
      sink = sink ^ static_cast<std::uint8_t>(t->data[0]) ^
             static_cast<std::uint8_t>(t->data[t->bytes() - 1]);
    }
  });
  fplab::fuzz::expect_clean([&] {
    const auto map = ck::MappedFile::open(path);
    const auto g = ck::read_gguf(map->bytes(), "fuzz");
    const auto tok = ck::BpeTokenizer::from_gguf(g, "fuzz");
    const std::string text = "the and <|end|>  then\n\n caf\xc3\xa9 123 \xf0\x9f\x98\x80";
    (void)tok.decode(tok.encode(text));
  });
  return 0;
}
