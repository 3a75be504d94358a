#include "models/downloader.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"
#include "core/sha256.h"
#include "core/version.h"

namespace parley::models {

namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FileHandle = std::unique_ptr<std::FILE, FileCloser>;

struct CurlDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

void initialise_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of(":/?#", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

struct Transfer {
  std::FILE* file = nullptr;
  bool write_failed = false;
  std::uint64_t written = 0;
  std::uint64_t offset = 0;  // bytes already in the partial file when this transfer began
  std::optional<std::uint64_t> expected_size;
  bool show_progress = false;
  std::string label;
  std::chrono::steady_clock::time_point last_report{};
};

std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::size_t bytes = size * count;
  if (std::fwrite(data, 1, bytes, transfer->file) != bytes) {
    transfer->write_failed = true;
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  transfer->written += bytes;
  return bytes;
}

int report_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  if (!transfer->show_progress) return 0;
  const auto clock = std::chrono::steady_clock::now();
  if (clock - transfer->last_report < std::chrono::milliseconds(250)) return 0;
  transfer->last_report = clock;
  const double done = static_cast<double>(transfer->offset + static_cast<std::uint64_t>(now));
  const double whole =
      transfer->expected_size
          ? static_cast<double>(*transfer->expected_size)
          : static_cast<double>(transfer->offset + static_cast<std::uint64_t>(total));
  fmt::print(stderr, "\r  {}: {:.1f} / {:.1f} MB", transfer->label, done / 1e6, whole / 1e6);
  std::fflush(stderr);
  return 0;
}

std::uint64_t size_or_zero(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::uint64_t>(size);
}

void remove_quietly(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::remove(path, error);
}

enum class Outcome { kComplete, kRestartWithoutRange };

// One libcurl transfer appending to `partial` from byte `offset`.
Outcome transfer_once(const std::string& url, const std::filesystem::path& partial,
                      std::uint64_t offset, const std::optional<std::uint64_t>& expected_size,
                      const DownloadOptions& options, const std::filesystem::path& destination) {
  FileHandle file(std::fopen(partial.c_str(), offset > 0 ? "ab" : "wb"));
  if (!file) {
    fail("cannot write {}: {}; check that the folder exists and is writable", partial.string(),
         std::generic_category().message(errno));
  }
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) fail("libcurl could not start a transfer (out of memory?)");

  Transfer transfer;
  transfer.file = file.get();
  transfer.offset = offset;
  transfer.expected_size = expected_size;
  transfer.show_progress = options.show_progress;
  transfer.label = destination.filename().string();

  std::unique_ptr<curl_slist, HeaderListDeleter> headers;
  if (options.huggingface_token && host_of(url) == "huggingface.co") {
    // libcurl keeps custom Authorization headers off redirects to other hosts (the CDN).
    const std::string header = "Authorization: Bearer " + *options.huggingface_token;
    headers.reset(curl_slist_append(nullptr, header.c_str()));
  }
  const std::string user_agent = fmt::format("parley/{}", kVersion);
  char error_text[CURL_ERROR_SIZE] = {};
  CURL* handle = curl.get();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(handle, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(handle, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(handle, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1000L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_seconds);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, report_progress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &transfer);
  if (headers) curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  if (offset > 0) {
    curl_easy_setopt(handle, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
  }

  const CURLcode code = curl_easy_perform(handle);
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  if (options.show_progress) fmt::print(stderr, "\n");
  const bool flushed = std::fflush(file.get()) == 0;
  file.reset();

  const std::string detail = error_text[0] != '\0' ? error_text : curl_easy_strerror(code);
  const std::string host = host_of(url);
  if (code == CURLE_OK) {
    if (!flushed) fail("cannot write {}: is the disk full?", partial.string());
    return Outcome::kComplete;
  }
  if (transfer.write_failed || code == CURLE_WRITE_ERROR) {
    fail(
        "cannot write {} ({}): is the disk full? Free space and run the command again to "
        "resume",
        partial.string(), std::generic_category().message(errno));
  }
  // The server ignored the Range request (200 instead of 206), or the partial file is already
  // as long as the whole file (416): start over from the first byte.
  if (offset > 0 && (code == CURLE_RANGE_ERROR || status == 416)) {
    return Outcome::kRestartWithoutRange;
  }
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      throw UnreachableError(
          fmt::format("cannot reach {} ({}): this machine looks offline or a firewall blocks "
                      "it; connect it and run the command again, or download {} on a connected "
                      "machine and copy it to {}, then run `parley models verify`",
                      host, detail, url, destination.string()),
          host);
    case CURLE_OPERATION_TIMEDOUT:
      fail(
          "{} stopped answering ({}); run the command again: it resumes from the {} bytes "
          "already in {}",
          host, detail, size_or_zero(partial), partial.string());
    case CURLE_HTTP_RETURNED_ERROR:
      if (status == 401 || status == 403) {
        fail(
            "{} refused access (HTTP {}): the file may be gated; on Hugging Face accept the "
            "model's conditions while logged in, create a read token at "
            "https://huggingface.co/settings/tokens and set HF_TOKEN to it",
            url, status);
      }
      if (status == 404) {
        fail(
            "{} does not exist (HTTP 404): the file has moved; try another URL from `parley "
            "models list`, or update models/manifest.json",
            url);
      }
      fail("{} answered HTTP {}; try again later", url, status);
    default:
      fail("downloading {} failed: {}; run the command again to resume", url, detail);
  }
}

// One download into `partial`, checked, then renamed to `destination`.
DownloadResult download_to_partial(const std::string& url, const std::filesystem::path& destination,
                                   const std::filesystem::path& partial,
                                   const std::optional<std::uint64_t>& expected_size,
                                   const std::optional<std::string>& expected_sha256,
                                   const DownloadOptions& options) {
  std::error_code error;
  DownloadResult result;
  std::uint64_t offset = size_or_zero(partial);
  if (expected_size && offset > *expected_size) offset = 0;  // not a prefix of this file
  result.resumed = offset > 0;
  if (expected_size && expected_sha256 && offset == *expected_size &&
      sha256_file(partial) == *expected_sha256) {
    // An earlier run received every byte but stopped before the rename.
    std::filesystem::rename(partial, destination, error);
    if (!error) return DownloadResult{offset, true, *expected_sha256};
  }
  // At most two passes: a resumed attempt whose bytes turn out wrong is redone from zero once.
  for (int pass = 0; pass < 2; ++pass) {
    if (transfer_once(url, partial, offset, expected_size, options, destination) ==
        Outcome::kRestartWithoutRange) {
      offset = 0;
      result.resumed = false;
      transfer_once(url, partial, 0, expected_size, options, destination);
    }
    result.bytes = size_or_zero(partial);
    result.sha256 = sha256_file(partial);
    const bool size_ok = !expected_size || result.bytes == *expected_size;
    const bool sha_ok = !expected_sha256 || result.sha256 == *expected_sha256;
    if (size_ok && sha_ok) {
      std::filesystem::rename(partial, destination, error);
      if (error) {
        fail("cannot move {} to {}: {}", partial.string(), destination.string(), error.message());
      }
      return result;
    }
    remove_quietly(partial);
    if (result.resumed && pass == 0) {
      offset = 0;
      result.resumed = false;
      continue;
    }
    if (!sha_ok) {
      fail(
          "{}: sha256 mismatch: expected {}, actual {} ({} bytes); the download is damaged or "
          "the server now serves another file. It was deleted; run the command again, and if "
          "it persists report it",
          url, *expected_sha256, result.sha256, result.bytes);
    }
    fail("{}: expected {} bytes, received {}; it was deleted; run the command again", url,
         *expected_size, result.bytes);
  }
  fail("{}: download did not complete; run the command again", url);
}

}  // namespace

DownloadOptions default_download_options() {
  DownloadOptions options;
  if (const char* token = std::getenv("HF_TOKEN"); token != nullptr && *token != '\0') {
    options.huggingface_token = token;
  }
  options.show_progress = isatty(STDERR_FILENO) != 0;
  return options;
}

DownloadResult download_file(const std::string& url, const std::filesystem::path& destination,
                             const std::optional<std::uint64_t>& expected_size,
                             const std::optional<std::string>& expected_sha256,
                             const DownloadOptions& options) {
  initialise_curl_once();
  std::error_code error;
  if (destination.has_parent_path()) {
    std::filesystem::create_directories(destination.parent_path(), error);
    if (error) {
      fail("cannot create {}: {}; choose another destination folder",
           destination.parent_path().string(), error.message());
    }
  }
  const std::filesystem::path partial = destination.string() + ".partial";

  try {
    return download_to_partial(url, destination, partial, expected_size, expected_sha256, options);
  } catch (const Error&) {
    // A failure before the first byte leaves an empty file that would only confuse people.
    std::error_code ignored;
    if (std::filesystem::exists(partial, ignored) && size_or_zero(partial) == 0) {
      remove_quietly(partial);
    }
    throw;
  }
}

DownloadResult fetch_model(const ModelEntry& entry, const std::filesystem::path& dir,
                           const DownloadOptions& options) {
  if (entry.speed_twin) {
    fail("{} is generated, not downloaded: run `/usr/bin/python3 {} --output {}`", entry.id,
         entry.generator, (dir / entry.file).string());
  }
  if (entry.urls.empty()) {
    fail(
        "{} is derived from another model by {}, not downloaded: `scripts/prepare-models` "
        "makes it",
        entry.id, entry.generator);
  }
  std::vector<std::string> failures;
  std::vector<std::string> unreachable_hosts;
  for (const auto& url : entry.urls) {
    try {
      return download_file(url, dir / entry.file, entry.size, entry.sha256, options);
    } catch (const UnreachableError& failure) {
      failures.emplace_back(failure.what());
      unreachable_hosts.push_back(failure.host());
    } catch (const Error& failure) {
      failures.emplace_back(failure.what());
    }
  }
  if (failures.size() == 1) throw Error(failures.front());
  if (unreachable_hosts.size() == failures.size()) {
    // One sentence instead of the same advice per address.
    fail(
        "cannot reach {}: this machine looks offline or a firewall blocks it; connect it and run "
        "the command again, or download {} on a connected machine and copy it to {}, then run "
        "`parley models verify`",
        fmt::join(unreachable_hosts, " or "), entry.urls.front(), (dir / entry.file).string());
  }
  fail("no address of {} worked: {}", entry.id, fmt::join(failures, " | "));
}

}  // namespace parley::models
