#pragma once
// What the server does with messages before a client sees them: the server's own paths replaced
// by what the client knows, and a write that failed for want of room told apart from other
// failures.
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "core/text.h"

namespace parley::server {

// The server's own paths in a message become what the client knows: core/text.h's.
using parley::replace_all;

// A full disk, a quota or a file-size limit: core/atomic_file.cpp words its errors with
// strerror, the job store with SQLite's message for SQLITE_FULL.
inline bool is_out_of_space(std::string_view message) {
  for (const int code : {ENOSPC, EDQUOT, EFBIG}) {
    if (message.find(std::strerror(code)) != std::string_view::npos) return true;
  }
  return message.find("database or disk is full") != std::string_view::npos;
}

}  // namespace parley::server
