// The pin file of the kernel chooser (conv_choice.h): "<key> <candidate>" lines, read and written.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/conv_choice.h"

namespace keras::cpu {

// The pins of a file; blank lines and '#' comments skipped. IOError naming the file and line for
// a malformed line or an unknown candidate, or when the file cannot be read.
std::vector<std::pair<std::string, ConvCandidate>> parse_pin_file(const std::string& path);

// Writes `choices` as pin lines, atomically (a temporary renamed into place). IOError when the
// file cannot be written.
void write_choices(const std::vector<ConvChoice>& choices, const std::string& path);

}  // namespace keras::cpu
