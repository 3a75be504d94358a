/* The C API end to end on real recordings: c_api_test MODELS_DIR EVAL_DIR.
 * Plain C, so that the header is proven to be C. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <parley/parley.h>

#include "c_api_test_support.h"

static char path_buffer[4][1024];
static const char* join(int slot, const char* folder, const char* name) {
  snprintf(path_buffer[slot], sizeof path_buffer[slot], "%s/%s", folder, name);
  return path_buffer[slot];
}

static double now(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

static char* read_text(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return NULL;
  fseek(file, 0, SEEK_END);
  const long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char* text = calloc((size_t)size + 1, 1);
  if (fread(text, 1, (size_t)size, file) != (size_t)size) text[0] = '\0';
  fclose(file);
  return text;
}

struct logged {
  int count;
  int lowest_level;
};

static void record_log(parley_log_level level, const char* message, void* user_data) {
  struct logged* logged = user_data;
  if (message == NULL || strchr(message, '\n') != NULL) return;
  if (logged->count == 0 || (int)level < logged->lowest_level) logged->lowest_level = (int)level;
  ++logged->count;
}

/* Wrong parameters fail before any model loads, with the status and a message naming them. */
static void rejects_bad_params(const char* models) {
  parley_diarizer* diarizer = NULL;
  parley_params params = parley_default_params();
  params.models_dir = models;
  params.provider = "nonsense";
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(diarizer == NULL);
  CHECK(strstr(parley_last_error(), "unknown execution provider") != NULL);

  const char* options[] = {"device_id=0", NULL};
  params.provider = "cpu";
  params.provider_options = options;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
  /* The engine's message, as the CLI shows it with its flag names (cli_providers_test). */
  CHECK(
      strcmp(
          parley_last_error(),
          "provider_options (device_id=0) have no effect on the cpu provider (provider cpu); drop "
          "them") == 0);
  const char* malformed[] = {"device_id", NULL};
  params.provider = "auto";
  params.provider_options = malformed;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "key=value") != NULL);

  /* A missing models folder: the engine's locator refuses it, the same for the params and the
   * named options. */
  params = parley_default_params();
  params.models_dir = "/no/such/folder";
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_MODELS);
  CHECK(strstr(parley_last_error(), "'/no/such/folder' (models_dir) does not exist") != NULL);
  {
    char from_params[512];
    parley_options* named = NULL;
    snprintf(from_params, sizeof from_params, "%s", parley_last_error());
    CHECK(parley_options_new(NULL, &named) == PARLEY_OK);
    CHECK(parley_options_set(named, "models_dir", "/no/such/folder") == PARLEY_OK);
    CHECK(parley_diarizer_new_from(named, &diarizer) == PARLEY_ERROR_MODELS);
    CHECK(strcmp(parley_last_error(), from_params) == 0);
    parley_options_free(named);
  }

  params.models_dir = models;
  params.threads = -1;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
  params.threads = 0;
  params.step_seconds = 0.0;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
  /* A step far below pyannote's would make millions of chunks; NaN and infinity are no steps. */
  const double steps[] = {0.01, NAN, INFINITY, 11.0};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
    params.step_seconds = steps[i];
    CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "step: must be 0.1 to 10") != NULL);
  }
  params.step_seconds = 1.0;
  params.embedding_model = "/no/such/model.onnx";
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_ERROR_MODELS);
  CHECK(diarizer == NULL);
  CHECK(parley_diarizer_new(NULL, &diarizer) == PARLEY_ERROR_INVALID_ARGUMENT);
}

typedef struct {
  int calls;
  int stop_after;
  double last_fraction;
  char first_stage[64];
  char stage[64];
  int stages;  /* stage changes */
  int ones;    /* reports of 1.0 */
  int repeats; /* a fraction reported again in the same stage */
} progress_log;

static int record_progress(double fraction, const char* stage, void* user_data) {
  progress_log* log = user_data;
  if (log->calls == 0) snprintf(log->first_stage, sizeof log->first_stage, "%s", stage);
  if (strcmp(stage, log->stage) != 0) {
    snprintf(log->stage, sizeof log->stage, "%s", stage);
    ++log->stages;
  } else if (fraction == log->last_fraction) {
    ++log->repeats;
  }
  ++log->calls;
  if (fraction == 1.0) ++log->ones;
  log->last_fraction = fraction;
  return log->stop_after > 0 && log->calls >= log->stop_after;
}

static void diarizes_a_recording(parley_diarizer* diarizer, const char* eval, char** rttm) {
  progress_log log = {0, 0, 0.0, "", "", 0, 0, 0};
  parley_run_options options = parley_default_run_options();
  options.progress = record_progress;
  options.progress_user_data = &log;
  parley_result* result = NULL;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), &options, &result) ==
        PARLEY_OK);
  if (result == NULL) return;
  CHECK(log.calls >= 3);
  CHECK(log.last_fraction == 1.0);
  /* Each stage ends with one 1.0, and no fraction comes twice. */
  CHECK(log.stages >= 2);
  CHECK(log.ones == log.stages);
  CHECK(log.repeats == 0);
  CHECK(strcmp(log.first_stage, "segmentation+embedding") == 0);
  CHECK(strcmp(parley_result_uri(result), "test") == 0);
  CHECK(parley_result_duration(result) > 18.0 && parley_result_duration(result) < 20.0);
  const size_t speakers = parley_result_speaker_count(result);
  CHECK(speakers >= 1);
  const size_t turns = parley_result_turn_count(result, 0);
  CHECK(turns >= 1);
  CHECK(parley_result_turn_count(result, 1) >= 1);
  for (size_t i = 0; i < turns; ++i) {
    const parley_turn turn = parley_result_turn(result, i, 0);
    CHECK(turn.speaker >= 0 && (size_t)turn.speaker < speakers);
    CHECK(turn.end > turn.start);
  }
  CHECK(parley_result_turn(result, turns, 0).speaker == -1);
  CHECK(parley_result_embedding_dimension(result) == 256);
  for (size_t s = 0; s < speakers; ++s) CHECK(parley_result_embedding(result, s) != NULL);
  CHECK(parley_result_embedding(result, speakers) == NULL);
  int has_segmentation = 0;
  for (size_t i = 0; i < parley_result_stage_count(result); ++i) {
    if (strcmp(parley_result_stage_name(result, i), "segmentation") == 0) has_segmentation = 1;
    CHECK(parley_result_stage_seconds(result, i) >= 0.0);
  }
  CHECK(has_segmentation);
  CHECK(parley_result_warning_count(result) == 1);
  CHECK(strstr(parley_result_warning(result, 0), "speed twin") != NULL);
  CHECK(parley_result_speed_twin(result) == 1);
  CHECK(parley_diarizer_speed_twin(diarizer) == 1);
  CHECK(parley_diarizer_warning_count(diarizer) == 1);
  CHECK(strstr(parley_diarizer_warning(diarizer, 0), "speed twin") != NULL);
  CHECK(strcmp(parley_diarizer_warning(diarizer, 1), "") == 0);
  /* A uri RTTM cannot hold is an error, not an exception through C. */
  CHECK(parley_result_rttm(result, "a b\nc") == NULL);
  CHECK(strstr(parley_last_error(), "uri") != NULL);
  CHECK(parley_result_rttm(result, "tab\there") == NULL);
  CHECK(parley_result_rttm(NULL, NULL) == NULL);
  CHECK(parley_result_json(NULL) == NULL);
  CHECK(parley_result_speed_twin(NULL) == 0);
  CHECK(strncmp(parley_result_rttm(result, NULL), "SPEAKER test 1 ", 15) == 0);
  CHECK(strncmp(parley_result_rttm(result, "other"), "SPEAKER other 1 ", 16) == 0);
  CHECK(strstr(parley_result_json(result), "\"exclusive_diarization\"") != NULL);
  CHECK(strstr(parley_result_json(result), "\"speaker_embeddings\": {\n    \"SPEAKER_00\": [") !=
        NULL);
  /* Every format through the one writer; the text is the caller's. */
  char* text = parley_result_format(result, "rttm", 0, NULL);
  CHECK(text != NULL && strcmp(text, parley_result_rttm(result, NULL)) == 0);
  parley_free(text);
  text = parley_result_format(result, "json", 1, NULL);
  CHECK(text != NULL && strcmp(text, parley_result_json(result)) == 0);
  parley_free(text);
  text = parley_result_format(result, "rttm", 1, "other");
  CHECK(text != NULL && strncmp(text, "SPEAKER other 1 ", 16) == 0);
  parley_free(text);
  text = parley_result_format(result, "txt", 1, NULL);
  CHECK(text != NULL && strstr(text, " SPEAKER_0") != NULL);
  parley_free(text);
  text = parley_result_format(result, "srt", 0, NULL);
  CHECK(text != NULL && strncmp(text, "1\n00:00:", 8) == 0 && strstr(text, " --> ") != NULL);
  parley_free(text);
  text = parley_result_format(result, "vtt", 1, NULL);
  CHECK(text != NULL && strncmp(text, "WEBVTT\n", 7) == 0);
  parley_free(text);
  CHECK(parley_result_format(result, "docx", 0, NULL) == NULL);
  CHECK(strstr(parley_last_error(), "format 'docx': expected one of rttm, json, txt, srt, vtt") !=
        NULL);
  CHECK(parley_result_format(result, NULL, 0, NULL) == NULL);
  CHECK(parley_result_format(NULL, "rttm", 0, NULL) == NULL);
  CHECK(parley_result_format(result, "rttm", 0, "a b") == NULL);
  parley_free(NULL);
  *rttm = strdup(parley_result_rttm(result, NULL));
  parley_result_free(result);

  options.num_speakers = 2;
  options.progress = NULL;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), &options, &result) ==
        PARLEY_OK);
  CHECK(parley_result_speaker_count(result) == 2);
  parley_result_free(result);
}

static void reports_failures(parley_diarizer* diarizer, const char* eval) {
  parley_result* result = NULL;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "no-such.wav"), NULL, &result) ==
        PARLEY_ERROR_AUDIO);
  CHECK(result == NULL);
  CHECK(strstr(parley_last_error(), "no-such.wav") != NULL);

  parley_run_options options = parley_default_run_options();
  options.min_speakers = 3;
  options.max_speakers = 2;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), &options, &result) ==
        PARLEY_ERROR_INVALID_ARGUMENT);

  float silence[160] = {0};
  /* Rates outside what files may declare: 1 Hz would make 4 s of samples 17.8 hours. */
  const int rates[] = {0, -16000, 1, 7, 999, 768001};
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; ++i) {
    CHECK(parley_diarize_samples(diarizer, silence, 160, rates[i], NULL, &result) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "sample_rate") != NULL);
  }
  options = parley_default_run_options();
  options.num_speakers = 1001;
  CHECK(parley_diarize_samples(diarizer, silence, 160, 16000, &options, &result) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  /* The engine's check and message (SpeakerCountConstraints::validate), as Python shows it. */
  CHECK(strcmp(parley_last_error(), "num_speakers must be 1 to 1000 (got 1001)") == 0);
  options = parley_default_run_options();
  options.max_speakers = 2000000000;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), &options, &result) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "max_speakers") != NULL);
  silence[3] = 0.0f / 0.0f;
  CHECK(parley_diarize_samples(diarizer, silence, 160, 16000, NULL, &result) ==
        PARLEY_ERROR_INVALID_ARGUMENT);

  progress_log log = {0, 2, 0.0, "", "", 0, 0, 0};
  options = parley_default_run_options();
  options.progress = record_progress;
  options.progress_user_data = &log;
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), &options, &result) ==
        PARLEY_ERROR_CANCELLED);
  CHECK(result == NULL);
  CHECK(log.calls == 2);
  /* The diarizer is still usable after a cancelled run. */
  CHECK(parley_diarize_file(diarizer, join(0, eval, "falcon-test/test.wav"), NULL, &result) ==
        PARLEY_OK);
  parley_result_free(result);
}

/* Results come out as each recording is done; a recording that fails fails alone. */
static void runs_a_batch(const char* models, const char* eval, const char* falcon_rttm) {
  parley_params params = parley_default_params();
  params.models_dir = models;
  parley_batch* batch = NULL;
  CHECK(parley_batch_new(&params, &batch) == PARLEY_OK);
  if (batch == NULL) return;
  /* Nothing submitted and not finished: an error at once, not a wait for ever. */
  parley_result* none = NULL;
  CHECK(parley_batch_wait(batch, 0.0) == 1);
  CHECK(parley_batch_next_result(batch, NULL, &none) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "parley_batch_finish") != NULL);
  CHECK(none == NULL);
  size_t index = 99;
  CHECK(parley_batch_submit_file(batch, join(0, eval, "falcon-test/test.wav"), NULL, &index) ==
        PARLEY_OK);
  CHECK(index == 0);
  CHECK(parley_batch_submit_file(batch, join(0, eval, "no-such.wav"), NULL, &index) == PARLEY_OK);
  CHECK(index == 1);
  parley_run_options two = parley_default_run_options();
  two.num_speakers = 2;
  CHECK(parley_batch_submit_file(batch, join(0, eval, "pyannote-sample/sample.wav"), &two,
                                 &index) == PARLEY_OK);
  parley_batch_finish(batch);
  CHECK(parley_batch_submit_file(batch, join(0, eval, "falcon-test/test.wav"), NULL, &index) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  int seen[3] = {0, 0, 0};
  for (;;) {
    parley_result* result = NULL;
    index = 99;
    const parley_status status = parley_batch_next_result(batch, &index, &result);
    if (status == PARLEY_DONE) break;
    CHECK(index < 3);
    if (index >= 3) break;
    ++seen[index];
    if (index == 1) {
      CHECK(status == PARLEY_ERROR_FAILED);
      CHECK(strstr(parley_last_error(), "no-such.wav") != NULL);
    } else {
      CHECK(status == PARLEY_OK);
    }
    if (index == 0 && result != NULL) {
      CHECK(strcmp(parley_result_rttm(result, NULL), falcon_rttm) == 0);
    }
    if (index == 2 && result != NULL) CHECK(parley_result_speaker_count(result) == 2);
    parley_result_free(result);
  }
  CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  CHECK(parley_batch_wait(batch, 1.0) == 1);
  parley_result* after = NULL;
  CHECK(parley_batch_next_result(batch, NULL, &after) == PARLEY_DONE);
  parley_batch_free(batch);

  /* Every submitted recording handed out, not finished: an error, then the batch goes on. */
  CHECK(parley_batch_new(&params, &batch) == PARLEY_OK);
  CHECK(parley_batch_submit_file(batch, join(0, eval, "falcon-test/test.wav"), NULL, NULL) ==
        PARLEY_OK);
  parley_result* result = NULL;
  CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_OK);
  CHECK(parley_result_speed_twin(result) == 1);
  parley_result_free(result);
  CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_batch_submit_file(batch, join(0, eval, "no-such.wav"), NULL, NULL) == PARLEY_OK);
  CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_ERROR_FAILED);
  parley_batch_finish(batch);
  CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_DONE);
  parley_batch_free(batch);

  /* Freed with work queued and never finished: stops without waiting for it. Of sixteen
   * recordings, those not started are dropped at once and those in the networks (a group of up
   * to three) at their next step (corpus_engine_test proves which are dropped): far less than
   * the sixteen recordings' time. Measured against one recording on this machine, as busy as
   * it is now. */
  parley_diarizer* diarizer = NULL;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_OK);
  const double alone_start = now();
  CHECK(parley_diarize_file(diarizer, join(0, eval, "ami-debug/dev00.wav"), NULL, &result) ==
        PARLEY_OK);
  const double alone = now() - alone_start;
  parley_result_free(result);
  parley_diarizer_free(diarizer);
  CHECK(parley_batch_new(&params, &batch) == PARLEY_OK);
  for (int i = 0; i < 16; ++i) {
    CHECK(parley_batch_submit_file(batch, join(0, eval, "ami-debug/dev00.wav"), NULL, NULL) ==
          PARLEY_OK);
  }
  (void)parley_batch_wait(batch, 1.0); /* the first recordings are in the networks */
  const double free_start = now();
  parley_batch_free(batch);
  const double freeing = now() - free_start;
  fprintf(stderr, "parley_batch_free took %.1f s, one recording alone %.1f s\n", freeing, alone);
  CHECK(freeing < 4.0 * alone);
  parley_batch_finish(NULL);
  parley_batch_free(NULL);
  CHECK(parley_batch_wait(NULL, 1.0) == 1);
}

static void scores(const char* eval, const char* falcon_rttm) {
  char* reference = read_text(join(0, eval, "falcon-test/test.rttm"));
  CHECK(reference != NULL);
  if (reference == NULL) return;
  parley_der der;
  CHECK(parley_score_rttm(reference, reference, 0.0, 0, &der) == PARLEY_OK);
  CHECK(der.der == 0.0 && der.total > 10.0);
  CHECK(parley_score_rttm(reference, falcon_rttm, 0.25, 1, &der) == PARLEY_OK);
  CHECK(der.der > 0.0 && der.der <= 1.5);
  CHECK(der.missed + der.false_alarm + der.confusion > 0.0);
  CHECK(parley_score_rttm(reference, "SPEAKER x 1 oops", 0.0, 0, &der) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_score_rttm(reference, falcon_rttm, -1.0, 0, &der) == PARLEY_ERROR_INVALID_ARGUMENT);
  const double collars[] = {INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < sizeof collars / sizeof collars[0]; ++i) {
    CHECK(parley_score_rttm(reference, falcon_rttm, collars[i], 0, &der) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "collar") != NULL);
  }
  CHECK(parley_score_rttm(reference, falcon_rttm, 1e300, 0, &der) == PARLEY_OK);
  CHECK(parley_score_rttm(NULL, falcon_rttm, 0.0, 0, &der) == PARLEY_ERROR_INVALID_ARGUMENT);
  free(reference);
}

/* A batch that writes into a folder, as `parley diarize --out-dir` does: the second batch over
 * the same folder skips what the first finished, and says so in its counts. */
static void writes_into_a_folder(const char* models, const char* eval) {
  char folder[] = "/tmp/parley-c-api-out-XXXXXX";
  CHECK(mkdtemp(folder) != NULL);
  parley_params params = parley_default_params();
  params.models_dir = models;
  const char* audio = join(0, eval, "falcon-test/test.wav");
  int finished = -1;
  CHECK(parley_run_finished(&params, NULL, audio, folder, "rttm", NULL, &finished) == PARLEY_OK);
  CHECK(finished == 0);
  for (int round = 0; round < 2; ++round) {
    parley_batch* batch = NULL;
    CHECK(parley_batch_new(&params, &batch) == PARLEY_OK);
    if (batch == NULL) return;
    CHECK(strstr(parley_batch_layout(batch), "\"engines\":1") != NULL);
    CHECK(parley_batch_submit_to(batch, audio, folder, "rttm", NULL, NULL, NULL) == PARLEY_OK);
    CHECK(parley_batch_submit_to(batch, audio, folder, "mp3", NULL, NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    /* A second recording that would write the same output is refused, not silently lost. */
    CHECK(parley_batch_submit_to(batch, audio, folder, "rttm", "test", NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "pass a distinct name") != NULL);
    CHECK(parley_batch_submit_to(batch, audio, folder, "rttm", "a/b", NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    parley_batch_finish(batch);
    parley_result* result = NULL;
    const parley_status status = parley_batch_next_result(batch, NULL, &result);
    CHECK(status == (round == 0 ? PARLEY_OK : PARLEY_SKIPPED));
    CHECK((result != NULL) == (round == 0));
    parley_result_free(result);
    CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_DONE);
    size_t done = 9, skipped = 9, failed = 9;
    parley_batch_counts(batch, &done, &skipped, &failed);
    CHECK(done == (round == 0 ? 1u : 0u) && skipped == (round == 0 ? 0u : 1u) && failed == 0);
    parley_batch_free(batch);
  }
  CHECK(parley_run_finished(&params, NULL, audio, folder, "rttm", NULL, &finished) == PARLEY_OK);
  CHECK(finished == 1);
  /* Named options from the same params give the same answer, and lay out a batch as they ask:
   * jobs 3 is the layout's 3 jobs, as `parley diarize --jobs 3 --print-layout` shows. */
  parley_options* named = NULL;
  CHECK(parley_options_new(&params, &named) == PARLEY_OK);
  finished = -1;
  CHECK(parley_run_finished_from(named, NULL, audio, folder, "rttm", NULL, &finished) == PARLEY_OK);
  CHECK(finished == 1);
  CHECK(parley_options_set(named, "step", "2") == PARLEY_OK);
  CHECK(parley_run_finished_from(named, NULL, audio, folder, "rttm", NULL, &finished) == PARLEY_OK);
  CHECK(finished == 0);
  CHECK(parley_options_set(named, "jobs", "3") == PARLEY_OK);
  CHECK(parley_options_set(named, "jobs", "0") == PARLEY_ERROR_INVALID_ARGUMENT);
  parley_batch* laid_out = NULL;
  CHECK(parley_batch_new_from(named, &laid_out) == PARLEY_OK);
  CHECK(laid_out != NULL && strstr(parley_batch_layout(laid_out), "\"decode_threads\":3") != NULL);
  parley_batch_free(laid_out);
  CHECK(parley_batch_new_from(NULL, &laid_out) == PARLEY_ERROR_INVALID_ARGUMENT);
  parley_options_free(named);
  char* written = read_text(join(1, folder, "test.rttm"));
  CHECK(written != NULL && strstr(written, "SPEAKER test 1 ") != NULL);
  free(written);
  char* record = read_text(join(1, folder, ".parley/test.rttm.json"));
  CHECK(record != NULL && strstr(record, "\"fingerprint\"") != NULL);
  free(record);
  /* The exclusive turns, as `parley diarize --exclusive --out-dir` writes them: other output than
   * the overlapping turns (pyannote's sample has overlap), so its record is not taken for the
   * overlapping turns' one. */
  const char* overlapped = join(2, eval, "pyannote-sample/sample.wav");
  parley_batch* exclusive_batch = NULL;
  CHECK(parley_batch_new(&params, &exclusive_batch) == PARLEY_OK);
  if (exclusive_batch != NULL) {
    CHECK(parley_batch_set_exclusive(exclusive_batch, 1) == PARLEY_OK);
    CHECK(parley_batch_submit_to(exclusive_batch, overlapped, folder, "rttm", NULL, NULL, NULL) ==
          PARLEY_OK);
    parley_batch_finish(exclusive_batch);
    parley_result* result = NULL;
    CHECK(parley_batch_next_result(exclusive_batch, NULL, &result) == PARLEY_OK);
    if (result != NULL) {
      char* expected = parley_result_format(result, "rttm", 1, NULL);
      char* overlapping = parley_result_format(result, "rttm", 0, NULL);
      char* exclusive_text = read_text(join(1, folder, "sample.rttm"));
      CHECK(expected != NULL && exclusive_text != NULL && strcmp(expected, exclusive_text) == 0);
      CHECK(overlapping != NULL && exclusive_text != NULL &&
            strcmp(overlapping, exclusive_text) != 0);
      parley_free(expected);
      parley_free(overlapping);
      free(exclusive_text);
    }
    parley_result_free(result);
    parley_batch_free(exclusive_batch);
  }
  CHECK(parley_batch_set_exclusive(NULL, 1) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_run_finished(&params, NULL, overlapped, folder, "rttm", NULL, &finished) ==
        PARLEY_OK);
  CHECK(finished == 0);
  /* Named options with exclusive set ask for the exclusive turns' record: finished, as the
   * batch wrote it; without it, not. */
  parley_options* exclusive_options = NULL;
  CHECK(parley_options_new(&params, &exclusive_options) == PARLEY_OK);
  finished = -1;
  CHECK(parley_run_finished_from(exclusive_options, NULL, overlapped, folder, "rttm", NULL,
                                 &finished) == PARLEY_OK);
  CHECK(finished == 0);
  CHECK(parley_options_set(exclusive_options, "exclusive", "1") == PARLEY_OK);
  CHECK(parley_run_finished_from(exclusive_options, NULL, overlapped, folder, "rttm", NULL,
                                 &finished) == PARLEY_OK);
  CHECK(finished == 1);
  parley_options_free(exclusive_options);
  /* Names as the CLI gives them: equal file names in two folders are told apart. */
  const char* paths[] = {"/x/talk.wav", "/y/talk.wav", "/x/other.wav"};
  const char* names = parley_output_names(paths, 3);
  CHECK(names != NULL && strncmp(names, "talk-", 5) == 0 && strstr(names, "\nother\n") != NULL);
  const char* twice[] = {"/x/talk.wav", "/x/../x/talk.wav"};
  CHECK(parley_output_names(twice, 2) == NULL);
  CHECK(strstr(parley_last_error(), "listed twice") != NULL);
  /* Without a name a batch names an output as the CLI does, a long name cut and given digits:
   * the CLI's name of a long-named file is the one its submission claims. */
  char long_name[400];
  int written_bytes = snprintf(long_name, sizeof long_name, "%s/", folder);
  for (int i = 0; i < 200; ++i) long_name[written_bytes++] = 'l';
  snprintf(long_name + written_bytes, sizeof long_name - (size_t)written_bytes, ".wav");
  CHECK(symlink(audio, long_name) == 0);
  const char* long_paths[] = {long_name};
  const char* long_names = parley_output_names(long_paths, 1);
  CHECK(long_names != NULL && strlen(long_names) <= 161 && strchr(long_names, '-') != NULL);
  char cli_name[200] = "";
  if (long_names != NULL)
    snprintf(cli_name, sizeof cli_name, "%.*s", (int)strcspn(long_names, "\n"), long_names);
  parley_batch* batch = NULL;
  CHECK(parley_batch_new(&params, &batch) == PARLEY_OK);
  if (batch != NULL) {
    CHECK(parley_batch_submit_to(batch, long_name, folder, "rttm", NULL, NULL, NULL) == PARLEY_OK);
    CHECK(parley_batch_submit_to(batch, audio, folder, "rttm", cli_name, NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "pass a distinct name") != NULL);
    /* The same file twice claims its output twice. */
    CHECK(parley_batch_submit_to(batch, long_name, folder, "rttm", NULL, NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    /* Another format is another output. */
    CHECK(parley_batch_submit_to(batch, audio, folder, "json", cli_name, NULL, NULL) == PARLEY_OK);
    parley_batch_free(batch);
  }
  char command[200];
  snprintf(command, sizeof command, "rm -rf '%s'", folder);
  CHECK(system(command) == 0);
}

/* The text of the first `"key":"` string value in `json` after `from`, into `value`. */
static const char* json_string_after(const char* json, const char* from, const char* key,
                                     char* value, size_t size) {
  value[0] = '\0';
  const char* at = json != NULL && from != NULL ? strstr(json, from) : NULL;
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  at = at != NULL ? strstr(at, pattern) : NULL;
  if (at == NULL) return NULL;
  at += strlen(pattern);
  const size_t length = strcspn(at, "\"");
  snprintf(value, size, "%.*s", (int)length, at);
  return at + length;
}

/* The plan of a run over a list, as `parley diarize --manifest --out-dir` plans it: repeats
 * left out, names over the whole list, what an earlier run finished with these settings (and
 * not once a setting changes), and the formats and outputs a plan or a batch refuses. */
static void plans_a_run(const char* models, const char* eval) {
  char folder[] = "/tmp/parley-c-api-plan-XXXXXX";
  CHECK(mkdtemp(folder) != NULL);
  const char* audio = join(0, eval, "falcon-test/test.wav");
  char again[1024];
  snprintf(again, sizeof again, "%s/falcon-test/../falcon-test/test.wav", eval);
  char elsewhere[1100];
  snprintf(elsewhere, sizeof elsewhere, "%s/test.wav", folder);
  CHECK(symlink(audio, elsewhere) == 0);
  const char* paths[] = {audio, again, elsewhere};
  const char* formats[] = {"rttm"};
  parley_params params = parley_default_params();
  params.models_dir = models;
  params.threads = 2;
  parley_options* options = NULL;
  CHECK(parley_options_new(&params, &options) == PARLEY_OK);
  if (options == NULL) return;
  char out_dir[1100];
  snprintf(out_dir, sizeof out_dir, "%s/out", folder);

  char* plan = parley_corpus_plan_json(options, paths, 3, out_dir, formats, 1);
  CHECK(plan != NULL);
  /* The second path is the first's file: left out. Two files called test.wav: told apart. */
  CHECK(plan != NULL && strstr(plan, "\"repeats\":[{\"index\":1,\"first\":0}]") != NULL);
  char first_name[200], second_name[200];
  const char* rest = json_string_after(plan, "\"index\":0", "name", first_name, sizeof first_name);
  json_string_after(rest, "\"index\":2", "name", second_name, sizeof second_name);
  CHECK(strncmp(first_name, "test-", 5) == 0 && strncmp(second_name, "test-", 5) == 0);
  CHECK(strcmp(first_name, second_name) != 0);
  CHECK(plan != NULL && strstr(plan, "\"finished\":true") == NULL);
  CHECK(plan != NULL && strstr(plan, "/.parley/") != NULL);
  parley_free(plan);

  /* One recording written under its planned name: the plan then says it is finished, with the
   * record's seconds of audio; the other is not. A batch refuses the other under the same name. */
  parley_batch* batch = NULL;
  CHECK(parley_batch_new_from(options, &batch) == PARLEY_OK);
  if (batch != NULL) {
    CHECK(parley_batch_submit_to(batch, audio, out_dir, "rttm", first_name, NULL, NULL) ==
          PARLEY_OK);
    CHECK(parley_batch_submit_to(batch, elsewhere, out_dir, "rttm", first_name, NULL, NULL) ==
          PARLEY_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(parley_last_error(), "writes already") != NULL);
    parley_batch_finish(batch);
    parley_result* result = NULL;
    CHECK(parley_batch_next_result(batch, NULL, &result) == PARLEY_OK);
    parley_result_free(result);
    parley_batch_free(batch);
  }
  plan = parley_corpus_plan_json(options, paths, 3, out_dir, formats, 1);
  char seconds[64] = "";
  if (plan != NULL) {
    const char* first = strstr(plan, "\"index\":0");
    const char* second = strstr(plan, "\"index\":2");
    const char* finished = strstr(plan, "\"finished\":true");
    CHECK(first != NULL && second != NULL && finished != NULL && finished > first &&
          finished < second);
    CHECK(strstr(second, "\"finished\":true") == NULL);
    const char* at = first != NULL ? strstr(first, "\"audio_seconds\":") : NULL;
    if (at != NULL) snprintf(seconds, sizeof seconds, "%s", at + strlen("\"audio_seconds\":"));
    CHECK(atof(seconds) > 1.0);
  }
  CHECK(plan != NULL);
  parley_free(plan);
  /* Another step: nothing is finished with these settings. */
  CHECK(parley_options_set(options, "step", "2") == PARLEY_OK);
  plan = parley_corpus_plan_json(options, paths, 3, out_dir, formats, 1);
  CHECK(plan != NULL && strstr(plan, "\"finished\":true") == NULL);
  parley_free(plan);

  /* A format twice, none, or one the writer lacks is refused. */
  const char* twice[] = {"rttm", "rttm"};
  CHECK(parley_corpus_plan_json(options, paths, 3, out_dir, twice, 2) == NULL);
  CHECK(strstr(parley_last_error(), "twice") != NULL);
  CHECK(parley_corpus_plan_json(options, paths, 3, out_dir, NULL, 0) == NULL);
  const char* mp3[] = {"mp3"};
  CHECK(parley_corpus_plan_json(options, paths, 3, out_dir, mp3, 1) == NULL);
  /* Without a folder, names and repeats only; a name's bytes that are not UTF-8 come back as
   * escaped lone surrogates. */
  const char* odd[] = {"/nowhere/caf\xE9.wav", "/nowhere/./caf\xE9.wav"};
  plan = parley_corpus_plan_json(NULL, odd, 2, NULL, NULL, 0);
  CHECK(plan != NULL && strstr(plan, "\"name\":\"caf\\udce9\"") != NULL);
  CHECK(plan != NULL && strstr(plan, "\"repeats\":[{\"index\":1,\"first\":0}]") != NULL);
  parley_free(plan);
  parley_options_free(options);
  char command[200];
  snprintf(command, sizeof command, "rm -rf '%s'", folder);
  CHECK(system(command) == 0);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODELS_DIR EVAL_DIR\n", argv[0]);
    return 2;
  }
  const char* models = argv[1];
  const char* eval = argv[2];
  CHECK(strlen(parley_version()) > 0);
  CHECK(strcmp(parley_status_name(PARLEY_ERROR_CANCELLED), "cancelled") == 0);
  rejects_bad_params(models);

  CHECK(parley_abi_version() == PARLEY_ABI_VERSION);
  CHECK(strstr(parley_options_json(), "\"name\": \"step\"") != NULL);

  parley_params params = parley_default_params();
  /* step is the option table's name; step_seconds, its older name, is the same field. */
  CHECK(params.step == 1.0 && params.step_seconds == 1.0);
  params.step_seconds = 2.0;
  CHECK(params.step == 2.0);
  params.step = 1.0;
  params.models_dir = models;
  params.threads = 2;
  parley_diarizer* diarizer = NULL;
  /* The log goes to the callback, at the level asked for, while the models load. */
  struct logged logged = {0, -1};
  parley_set_log_callback(record_log, &logged);
  CHECK(parley_set_log_level(PARLEY_LOG_DEBUG) == PARLEY_OK);
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_OK);
  CHECK(strcmp(parley_last_error(), "") == 0);
  CHECK(logged.count > 0);
  CHECK(logged.lowest_level == PARLEY_LOG_DEBUG || logged.lowest_level == PARLEY_LOG_INFO);
  CHECK(parley_set_log_level((parley_log_level)7) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_set_log_level(PARLEY_LOG_WARNING) == PARLEY_OK);
  parley_set_log_callback(NULL, NULL);
  if (diarizer == NULL) return 1;
  char* falcon_rttm = NULL;
  diarizes_a_recording(diarizer, eval, &falcon_rttm);
  reports_failures(diarizer, eval);
  parley_diarizer_free(diarizer);
  if (falcon_rttm != NULL) {
    runs_a_batch(models, eval, falcon_rttm);
    writes_into_a_folder(models, eval);
    plans_a_run(models, eval);
    scores(eval, falcon_rttm);
  }
  free(falcon_rttm);
  if (failures > 0) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
