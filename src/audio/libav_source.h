#pragma once
// The libav backend (ffmpeg's libavformat/libavcodec): whatever they demux and decode, e.g. m4a,
// mp4, aac, webm, opus, wma. Used for MP3 and when libsndfile cannot open a file.
#include <filesystem>
#include <memory>
#include <string>

#include "audio/audio_source.h"

namespace parley::audio {

// Opens the best audio stream of `path`. Returns nullptr and sets `why_not` when libav cannot
// demux the file or it holds no decodable audio stream. Throws parley::Error when the stream's
// parameters are unusable (0 Hz, 0 channels).
std::unique_ptr<AudioSource> open_libav_source(const std::filesystem::path& path,
                                               std::string& why_not);

// A libav error code as a clause about the recording ("its data is not valid for its format"),
// where libav's own text is an errno's ("Operation not permitted") or a bare number.
std::string libav_error_meaning(int code);

// True when libav's demuxer takes `path` for MPEG audio (MP3, with or without ID3 tags).
bool is_mpeg_audio(const std::filesystem::path& path);

}  // namespace parley::audio
