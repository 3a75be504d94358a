/* parley_stream_* on the real segmentation model (and the embedding speed twin): events through
 * poll and through the callback, identical whatever the chunk sizes; the final result made of
 * the events' turns; final_recluster equal to parley_diarize_samples' turns under live names.
 * Usage: stream_api_test MODELS_DIR RECORDING.wav (16-bit PCM, mono, 16 kHz). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parley/parley.h"

#define CHECK(condition)                                                          \
  do {                                                                            \
    if (!(condition)) {                                                           \
      fprintf(stderr, "%s:%d: failed: %s (%s)\n", __FILE__, __LINE__, #condition, \
              parley_last_error());                                               \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

/* The samples of a canonical 16-bit PCM WAV file (the data chunk after the header). */
static int16_t* read_wav(const char* path, size_t* count) {
  FILE* file = fopen(path, "rb");
  CHECK(file != NULL);
  unsigned char header[12];
  CHECK(fread(header, 1, 12, file) == 12 && memcmp(header, "RIFF", 4) == 0);
  for (;;) {
    unsigned char chunk[8];
    CHECK(fread(chunk, 1, 8, file) == 8);
    const uint32_t size = (uint32_t)chunk[4] | (uint32_t)chunk[5] << 8 | (uint32_t)chunk[6] << 16 |
                          (uint32_t)chunk[7] << 24;
    if (memcmp(chunk, "data", 4) == 0) {
      int16_t* samples = malloc(size);
      CHECK(samples != NULL && fread(samples, 1, size, file) == size);
      fclose(file);
      *count = size / 2;
      return samples;
    }
    CHECK(fseek(file, (long)(size + (size & 1)), SEEK_CUR) == 0);
  }
}

typedef struct {
  parley_stream_event events[4096];
  size_t count;
} event_list;

static void collect(const parley_stream_event* event, void* user_data) {
  event_list* list = user_data;
  CHECK(list->count < 4096);
  list->events[list->count++] = *event;
}

static void poll_all(parley_stream* stream, event_list* list) {
  parley_stream_event some[3]; /* fewer than a step can make: the rest must wait in order */
  size_t n = 0;
  do {
    CHECK(parley_stream_poll(stream, some, 3, &n) == PARLEY_OK);
    for (size_t i = 0; i < n; ++i) collect(&some[i], list);
  } while (n > 0);
}

static int same(const parley_stream_event* a, const parley_stream_event* b) {
  return a->kind == b->kind && a->speaker == b->speaker && a->start == b->start &&
         a->end == b->end && a->audio_time == b->audio_time;
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  size_t count = 0;
  int16_t* samples = read_wav(argv[2], &count);
  parley_params params = parley_default_params();
  params.models_dir = argv[1];
  params.threads = 2;
  parley_diarizer* diarizer = NULL;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_OK);

  parley_stream_params settings = parley_default_stream_params();
  CHECK(settings.step == 0.5 && settings.latency == 2.0 && settings.sample_rate == 16000.0);
  settings.latency = 1.0;
  settings.step = 1.0; /* half the model calls of the default: the test runs four streams */

  /* Wrong arguments fail with a message. */
  parley_stream* stream = NULL;
  parley_stream_params wrong = settings;
  wrong.latency = 9.0;
  CHECK(parley_stream_new(diarizer, &wrong, &stream) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(stream == NULL && strstr(parley_last_error(), "latency") != NULL);
  /* The fields as parley_stream_params names them, not the library's StreamConfig. */
  CHECK(strstr(parley_last_error(), "_seconds") == NULL);
  wrong = settings;
  wrong.step = 2.0; /* above the latency */
  CHECK(parley_stream_new(diarizer, &wrong, &stream) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "latency (1) must be at least step (2)") != NULL);
  CHECK(parley_stream_new(NULL, &settings, &stream) == PARLEY_ERROR_INVALID_ARGUMENT);

  /* Polled, in chunks of 1234 samples. */
  static event_list polled, called;
  CHECK(parley_stream_new(diarizer, &settings, &stream) == PARLEY_OK);
  for (size_t at = 0; at < count; at += 1234) {
    const size_t n = count - at < 1234 ? count - at : 1234;
    CHECK(parley_stream_push_s16(stream, samples + at, n, 1) == PARLEY_OK);
    poll_all(stream, &polled);
  }
  parley_result* live = NULL;
  CHECK(parley_stream_finish(stream, &live) == PARLEY_OK);
  poll_all(stream, &polled);
  CHECK(parley_stream_push_s16(stream, samples, 1, 1) != PARLEY_OK); /* after finish */
  parley_stream_free(stream);

  /* Through the callback, as floats in chunks of 8000. */
  float* floats = malloc(count * sizeof(float));
  CHECK(floats != NULL);
  for (size_t i = 0; i < count; ++i) floats[i] = (float)samples[i] / 32768.0f;
  CHECK(parley_stream_new(diarizer, &settings, &stream) == PARLEY_OK);
  CHECK(parley_stream_set_callback(stream, collect, &called) == PARLEY_OK);
  for (size_t at = 0; at < count; at += 8000) {
    CHECK(parley_stream_push(stream, floats + at, count - at < 8000 ? count - at : 8000, 1) ==
          PARLEY_OK);
  }
  parley_result* again = NULL;
  CHECK(parley_stream_finish(stream, &again) == PARLEY_OK);
  parley_stream_free(stream);

  printf("%zu events, %zu speakers, %zu turns\n", polled.count, parley_result_speaker_count(live),
         parley_result_turn_count(live, 0));
  CHECK(polled.count > 0 && polled.count == called.count);
  size_t ends = 0;
  for (size_t i = 0; i < polled.count; ++i) {
    CHECK(same(&polled.events[i], &called.events[i]));
    const parley_stream_event* e = &polled.events[i];
    CHECK(e->kind != PARLEY_STREAM_TURN_UPDATE && e->start <= e->end && e->latency >= 0.0);
    CHECK(e->speaker >= 0 && (size_t)e->speaker < parley_result_speaker_count(live));
    if (e->kind == PARLEY_STREAM_TURN_END) ++ends;
  }
  CHECK(ends == parley_result_turn_count(live, 0));
  CHECK(strstr(parley_result_rttm(live, NULL), "SPEAKER_00") != NULL);
  parley_result_free(live);
  parley_result_free(again);

  /* final_recluster: the batch diarization's turns, under the live names. */
  settings.final_recluster = 1;
  CHECK(parley_stream_new(diarizer, &settings, &stream) == PARLEY_OK);
  CHECK(parley_stream_push(stream, floats, count, 1) == PARLEY_OK);
  parley_result* archived = NULL;
  CHECK(parley_stream_finish(stream, &archived) == PARLEY_OK);
  parley_stream_free(stream);
  parley_result* batch = NULL;
  CHECK(parley_diarize_samples(diarizer, floats, count, 16000, NULL, &batch) == PARLEY_OK);
  CHECK(parley_result_turn_count(archived, 0) == parley_result_turn_count(batch, 0));
  /* Batch output: its speaker count and one embedding row each, whatever the live side found. */
  CHECK(parley_result_speaker_count(archived) == parley_result_speaker_count(batch));
  CHECK(parley_result_embedding(archived, parley_result_speaker_count(batch) - 1) != NULL);
  CHECK(parley_result_embedding(archived, parley_result_speaker_count(batch)) == NULL);
  int mapping[1000];
  for (int i = 0; i < 1000; ++i) mapping[i] = -1;
  for (size_t i = 0; i < parley_result_turn_count(batch, 0); ++i) {
    const parley_turn a = parley_result_turn(archived, i, 0);
    const parley_turn b = parley_result_turn(batch, i, 0);
    CHECK(a.start == b.start && a.end == b.end);
    CHECK(b.speaker >= 0 && b.speaker < 1000 && a.speaker >= 0);
    /* One live name per batch speaker, throughout. */
    if (mapping[b.speaker] < 0) mapping[b.speaker] = a.speaker;
    CHECK(mapping[b.speaker] == a.speaker);
  }
  parley_result_free(archived);
  parley_result_free(batch);

  parley_diarizer_free(diarizer);
  free(floats);
  free(samples);
  printf("stream_api_test: ok\n");
  return 0;
}
