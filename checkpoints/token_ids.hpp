// Token ids as a user types them after FLAG (fplab tokenize --decode,
// fplab generate --prompt-ids): "1,2,3" or a JSON array "[1,2,3]"; each id
// from 0 to 2^30 (the model's vocabulary is checked by the caller). ""
// gives no ids. Throws InputError "FLAG: 'x' is not a token id" (one line).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::checkpoints {

std::vector<std::int64_t> parse_token_ids(std::string_view flag, const std::string& s);

}  // namespace fplab::checkpoints
