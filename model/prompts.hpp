// The fixed texts the model's measurements run on, and how two logit
// vectors are compared: the prompts every model experiment draws its first
// N from (kPrompts), the unrelated prompts that fill the other rows of a
// batch or continue a prefix-cache donor (kFillers; experiments/ and
// bisect/ both build batches from them), and Perturbation, the count of
// logits whose bits differ and the largest |difference|.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace fplab::model {

// Twelve prompts in the style of the training text (KJV); the fixed list
// every model experiment draws its first N prompts from.
inline constexpr std::array<std::string_view, 12> kPrompts = {
    "In the beginning God created the heaven and the earth. ",
    "And he said unto them, ",
    "Blessed are the poor in spirit: ",
    "The LORD is my shepherd; ",
    "And it came to pass, when ",
    "For God so loved the world, ",
    "Then said Jesus unto his disciples, ",
    "Hear, O Israel: ",
    "And the king commanded ",
    "Wherefore, my beloved brethren, ",
    "Now the serpent was more subtil than ",
    "Thus saith the LORD of hosts, ",
};

// Unrelated prompts that fill the other rows of a batch.
inline constexpr std::array<std::string_view, 15> kFillers = {
    "Honour thy father and thy mother",
    "And the earth was without form, and void",
    "Let not your heart be troubled",
    "A soft answer turneth away wrath",
    "Vanity of vanities, saith the Preacher",
    "And Moses went up unto God",
    "By the rivers of Babylon",
    "Behold, I stand at the door, and knock",
    "Ask, and it shall be given you",
    "The heavens declare the glory of God",
    "And David said to Saul",
    "Praise ye the LORD",
    "Go to the ant, thou sluggard",
    "In my Father's house are many mansions",
    "And Jacob went out from Beersheba",
};

// How the logits after `prompt` change when it shares a batch of `batch`
// rows with unrelated prompts (it is row 0) rather than running alone.
struct Perturbation {
  std::int64_t differing = 0;  // logits whose bits differ
  double max_change = 0;       // largest |difference| (exact: two nearby floats)
};

inline Perturbation compare_logits(std::span<const float> a, std::span<const float> b) {
  Perturbation p;
  for (std::size_t j = 0; j < a.size(); ++j) {
    if (a[j] != b[j]) ++p.differing;
    p.max_change =
        std::max(p.max_change, std::abs(static_cast<double>(a[j]) - static_cast<double>(b[j])));
  }
  return p;
}

}  // namespace fplab::model
