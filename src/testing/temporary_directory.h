#pragma once
// Tests take their folders the way parley itself does (core/temporary_directory.h), named
// parley-<label>-XXXXXX so that one a crashed test leaves behind says where it came from.
#include <string>

#include "core/temporary_directory.h"

namespace parley::testing {

class TemporaryDirectory : public parley::TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& label = "test")
      : parley::TemporaryDirectory("parley-" + label + "-") {}
};

}  // namespace parley::testing
