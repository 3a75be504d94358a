#include "core/text.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

#include <fmt/format.h>

namespace parley {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\n\v\f\r";
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(kWhitespace);
  return text.substr(first, last - first + 1);
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) return text;
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::size_t utf8_sequence_length(std::string_view text, std::size_t index) {
  const auto byte = [&](std::size_t offset) -> unsigned {
    return index + offset < text.size() ? static_cast<unsigned char>(text[index + offset]) : 0u;
  };
  const auto continuation = [&](std::size_t offset, unsigned low, unsigned high) {
    return byte(offset) >= low && byte(offset) <= high;
  };
  if (index >= text.size()) return 0;
  const unsigned lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1, 0x80, 0xBF) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned low = lead == 0xE0 ? 0xA0 : 0x80;   // no overlong forms
    const unsigned high = lead == 0xED ? 0x9F : 0xBF;  // no surrogates
    return continuation(1, low, high) && continuation(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned low = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned high = lead == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    return continuation(1, low, high) && continuation(2, 0x80, 0xBF) && continuation(3, 0x80, 0xBF)
               ? 4
               : 0;
  }
  return 0;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t index = 0; index < text.size();) {
    const std::size_t length = utf8_sequence_length(text, index);
    if (length == 0) return false;
    index += length;
  }
  return true;
}

std::string utf8_or_escaped(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (std::size_t index = 0; index < text.size();) {
    const std::size_t length = utf8_sequence_length(text, index);
    if (length > 0) {
      escaped.append(text.substr(index, length));
      index += length;
    } else {
      escaped += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[index]));
      ++index;
    }
  }
  return escaped;
}

std::string_view cut_at_utf8_boundary(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = 0;
  for (std::size_t index = 0; index < max_bytes;) {
    const std::size_t length = std::max<std::size_t>(1, utf8_sequence_length(text, index));
    if (index + length > max_bytes) break;
    index += length;
    end = index;
  }
  return text.substr(0, end);
}

void check_path_has_no_nul(const std::filesystem::path& path) {
  const std::string& text = path.native();
  const std::size_t nul = text.find('\0');
  if (nul == std::string::npos) return;
  std::string shown = utf8_or_escaped(text);
  // Shown with the NUL written out, so that the message says why the name is refused.
  std::string visible;
  for (const char c : shown) visible += c == '\0' ? std::string("\\0") : std::string(1, c);
  fail(
      "'{}': a path cannot hold a NUL byte (the system would read it as '{}'); fix the list or "
      "program that named it",
      visible, utf8_or_escaped(text.substr(0, nul)));
}

std::string counted(std::size_t count, std::string_view singular, std::string_view plural) {
  if (count == 1) return fmt::format("1 {}", singular);
  if (plural.empty()) return fmt::format("{} {}s", count, singular);
  return fmt::format("{} {}", count, plural);
}

}  // namespace parley
