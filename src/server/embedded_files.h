#pragma once
// Files compiled into the binary at build time (src/server/CMakeLists.txt writes them into
// embedded_files.cpp), so that what is served cannot drift from what is in the tree.
#include <string_view>

namespace parley::server {

std::string_view openapi_document();  // docs/openapi.json
std::string_view web_page();          // src/server/web_page.html

}  // namespace parley::server
