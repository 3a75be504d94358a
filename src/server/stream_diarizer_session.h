#pragma once
// The live endpoint's streams made by the stream diarizer (stream/stream_diarizer.h): one
// StreamDiarizer per WebSocket, all sharing the server's loaded StreamModels.
#include "server/live_session.h"
#include "stream/stream_diarizer.h"

namespace parley::server {

// Streams over `models` (which must outlive every stream) with `defaults` for what a request
// does not name. The request's settings (step, latency, provisional, final_recluster, embedding,
// ...) are parsed and checked by the stream's option table (stream/stream_options.h): a bad one
// throws parley::Error naming it, and so does the stream's construction when the models cannot
// embed as asked.
LiveStreamFactory stream_diarizer_factory(const stream::StreamModels& models,
                                          stream::StreamConfig defaults);

// The stream configuration a request asks for (exposed for tests).
stream::StreamConfig stream_config(const LiveStreamRequest& request,
                                   const stream::StreamConfig& defaults);

}  // namespace parley::server
