#include "core/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

#include "core/error.h"

namespace parley {
namespace {

struct DigestContextDeleter {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      fail("sha256: OpenSSL could not initialise a digest");
    }
  }
  void update(const void* data, std::size_t size) {
    if (EVP_DigestUpdate(context_.get(), data, size) != 1) fail("sha256: digest update failed");
  }
  std::string hex_digest() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1) {
      fail("sha256: digest finalisation failed");
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
      hex.push_back(kHex[digest[i] >> 4]);
      hex.push_back(kHex[digest[i] & 0xf]);
    }
    return hex;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, DigestContextDeleter> context_;
};

}  // namespace

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open to compute its sha256", path.string());
  Sha256 hasher;
  std::array<char, 1 << 16> block{};
  while (in) {
    in.read(block.data(), block.size());
    hasher.update(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail("{}: read error while computing its sha256", path.string());
  return hasher.hex_digest();
}

std::string sha256_text(std::string_view text) {
  Sha256 hasher;
  hasher.update(text.data(), text.size());
  return hasher.hex_digest();
}

}  // namespace parley
