/* parley: speaker diarization ("who spoke when"), the public C API, version 1.
 *
 *   parley_params params = parley_default_params();      // models found as the CLI finds them
 *   parley_diarizer* diarizer = NULL;
 *   if (parley_diarizer_new(&params, &diarizer) != PARLEY_OK) {
 *     fprintf(stderr, "%s\n", parley_last_error());
 *     return 1;
 *   }
 *   parley_result* result = NULL;
 *   if (parley_diarize_file(diarizer, "meeting.wav", NULL, &result) == PARLEY_OK) {
 *     for (size_t i = 0; i < parley_result_turn_count(result, 0); ++i) {
 *       parley_turn turn = parley_result_turn(result, i, 0);   // start, end, speaker index
 *     }
 *     parley_result_free(result);
 *   }
 *   parley_diarizer_free(diarizer);
 *
 * Errors: every function that can fail returns a parley_status; PARLEY_OK (0) is success.
 * On failure parley_last_error() holds a one-line message saying what to do next. A wrong
 * argument (NULL where a value is needed, a number out of range, NaN or infinity) is
 * PARLEY_ERROR_INVALID_ARGUMENT with a message naming it. No function lets a C++ exception out.
 *
 * Thread safety:
 *   - a parley_diarizer runs one call at a time: use one per thread (they are independent, so
 *     several threads may each diarize with their own at once);
 *   - a parley_result is read-only once returned and may be read from any thread at once;
 *   - a parley_batch may be fed (submit, finish) from one thread while another takes its results
 *     (next_result; a taker asks only for recordings already submitted, see next_result);
 *   - parley_last_error() is per thread;
 *   - the progress callback is called on the thread that called parley_diarize_*; the log
 *     callback on whichever thread logs (a batch's too), one call at a time.
 *
 * ABI: the library is libparley.so.PARLEY_ABI_VERSION (this header's definition is the only one:
 * the build reads it for the SONAME, the symbol version and parley.pc's abi_version).
 * Structs passed by value or pointer (parley_params, parley_run_options, ...) only change
 * together with that number; parley_abi_version() says which one the loaded library has.
 */
#ifndef PARLEY_PARLEY_H
#define PARLEY_PARLEY_H

#include <stddef.h>
#include <stdint.h>

#if defined(PARLEY_BUILDING_LIBRARY)
#define PARLEY_API __attribute__((visibility("default")))
#else
#define PARLEY_API
#endif

#define PARLEY_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parley_status {
  PARLEY_OK = 0,
  PARLEY_ERROR_INVALID_ARGUMENT = 1, /* a parameter or option is wrong (message names it) */
  PARLEY_ERROR_MODELS = 2,           /* models missing, unreadable, or unusable on the provider */
  PARLEY_ERROR_AUDIO = 3,            /* the recording cannot be read or decoded */
  PARLEY_ERROR_CANCELLED = 4,        /* the progress callback asked to stop */
  PARLEY_ERROR_FAILED = 5,           /* anything else (the message says what) */
  PARLEY_DONE = 6,                   /* parley_batch_next_result: every result was handed out */
  PARLEY_SKIPPED =
      7 /* parley_batch_next_result: finished by an earlier run (parley_batch_submit_to) */
} parley_status;

/* The message of the last failure on this thread ("" when none); valid until the next parley
 * call on this thread. */
PARLEY_API const char* parley_last_error(void);
/* "0.1.0" */
PARLEY_API const char* parley_version(void);
/* A short English name of a status ("invalid argument", ...). */
PARLEY_API const char* parley_status_name(parley_status status);
/* The PARLEY_ABI_VERSION the library was built with: a program compares it with the header's. */
PARLEY_API int parley_abi_version(void);
/* Frees text the library handed over to the caller (parley_result_format); NULL is ignored. */
PARLEY_API void parley_free(void* text);

/* ---- Log ---------------------------------------------------------------------------------- */

typedef enum parley_log_level {
  PARLEY_LOG_DEBUG = 0,
  PARLEY_LOG_INFO = 1,
  PARLEY_LOG_WARNING = 2, /* the default level */
  PARLEY_LOG_ERROR = 3,
  PARLEY_LOG_OFF = 4
} parley_log_level;

/* Receives each log message at or above the level (one line, no newline). */
typedef void (*parley_log_callback)(parley_log_level level, const char* message, void* user_data);

/* Sends the library's log to `callback` (NULL: back to standard error, the default). Messages
 * come from any thread, one call at a time; a callback must not call back into parley. */
PARLEY_API void parley_set_log_callback(parley_log_callback callback, void* user_data);
/* Messages below `level` are dropped (default PARLEY_LOG_WARNING). */
PARLEY_API parley_status parley_set_log_level(parley_log_level level);

/* ---- Options ------------------------------------------------------------------------------ */

/* Every diarization option of every face (the CLI's flags, the server's form fields, these
 * params, Python's keywords) as a JSON array of {"name", "type", "default", "minimum",
 * "maximum", "choices", "help", "faces": {"cli", "server", "c", "python", "dask"}}: the one table
 * the faces are made from. Owned by the library, valid for the life of the process. */
PARLEY_API const char* parley_options_json(void);

/* ---- Building a diarizer ------------------------------------------------------------------ */

typedef enum { PARLEY_CLUSTERING_VBX = 0, PARLEY_CLUSTERING_AHC = 1 } parley_clustering;
typedef enum { PARLEY_EMBEDDING_SHARED = 0, PARLEY_EMBEDDING_EXACT = 1 } parley_embedding_mode;

typedef struct parley_params {
  /* Folder searched for the models first. NULL: $PARLEY_MODELS, then the per-user cache (where
   * `parley models fetch` puts them), then share/parley/models of the prefix libparley is
   * installed in, then the build tree's build/models, as the parley command searches. */
  const char* models_dir;
  /* Explicit model files; NULL: found through the search above. */
  const char* segmentation_model; /* segmentation-3.0 .onnx */
  const char* embedding_model;    /* WeSpeaker ResNet34-LM .onnx (or its speed twin) */
  const char* plda_dir;           /* folder with plda.npz and xvec_transform.npz (VBx only) */
  /* Execution provider: "auto" (NULL too: a GPU where it pays off, else the CPU), "cpu",
   * "cuda", "tensorrt", "migraphx", "rocm", "coreml", "openvino", "dml". A named provider that
   * cannot be used fails parley_diarizer_new. */
  const char* provider;
  /* "key=value" options for the provider, a NULL-terminated list (NULL: none). */
  const char* const* provider_options;
  int device_id; /* accelerator number; -1: the provider's default */
  union {
    double step;         /* seconds between 10 s windows (0.1-10): 1 (default) or 2 */
    double step_seconds; /* the same field under its older name */
  };
  parley_embedding_mode embedding_mode; /* shared (default, faster) or exact (pyannote's) */
  parley_clustering clustering;         /* VBx (default, pyannote's) or AHC */
  /* CPU threads; 0: all cores (at most 4 times the cores). Output does not depend on it. */
  int threads;
} parley_params;

PARLEY_API parley_params parley_default_params(void);

typedef struct parley_diarizer parley_diarizer;

/* Loads the models (seconds; reuse the diarizer for many recordings). */
PARLEY_API parley_status parley_diarizer_new(const parley_params* params,
                                             parley_diarizer** diarizer);
PARLEY_API void parley_diarizer_free(parley_diarizer* diarizer);

/* Options by name, as the option table names them (parley_options_json: every option whose
 * faces.c is set), so that an option added to the table needs no change to this header.
 * Values are texts as the command line spells them ("2", "ahc", "true"/"on"); each is checked
 * when set, and the engine's message (in option names) is in parley_last_error(). A list option
 * (provider_options) gains one item per call. A NULL value puts the option back to its default.
 * parley_options_new starts from `params` (NULL: the defaults). */
typedef struct parley_options parley_options;
PARLEY_API parley_status parley_options_new(const parley_params* params, parley_options** options);
PARLEY_API void parley_options_free(parley_options* options);
PARLEY_API parley_status parley_options_set(parley_options* options, const char* name,
                                            const char* value);
/* Every C option's value, {name: value} (the table's default where none was set). Owned by
 * `options`, valid until its next set or free. */
PARLEY_API const char* parley_options_values_json(const parley_options* options);
/* parley_diarizer_new from named options. */
PARLEY_API parley_status parley_diarizer_new_from(const parley_options* options,
                                                  parley_diarizer** diarizer);
/* Things to tell the user about the models, once (every result repeats them): for example that
 * the embedding model is the speed twin. */
PARLEY_API size_t parley_diarizer_warning_count(const parley_diarizer* diarizer);
PARLEY_API const char* parley_diarizer_warning(const parley_diarizer* diarizer, size_t index);
/* 1 when the speaker-embedding model is the speed twin (random weights: timing is real, speaker
 * labels are meaningless), else 0. */
PARLEY_API int parley_diarizer_speed_twin(const parley_diarizer* diarizer);

/* ---- Diarizing ---------------------------------------------------------------------------- */

/* Called as work advances: `fraction` (0..1) of `stage` is done. Stages come in this order:
 * "segmentation+embedding" (or "segmentation" then "embedding"), then "clustering". Return
 * nonzero to stop: the call then fails with PARLEY_ERROR_CANCELLED. Each stage reports 0 first and
 * 1 last, and no fraction twice. */
typedef int (*parley_progress_callback)(double fraction, const char* stage, void* user_data);

typedef struct parley_run_options {
  int num_speakers;                  /* exact number of speakers (1 to 1000); 0: unknown */
  int min_speakers;                  /* 1 to 1000; 0: no lower bound */
  int max_speakers;                  /* 1 to 1000; 0: no upper bound */
  parley_progress_callback progress; /* NULL: none (not used by parley_batch) */
  void* progress_user_data;
} parley_run_options;

PARLEY_API parley_run_options parley_default_run_options(void);

typedef struct parley_result parley_result;

/* Any format parley reads (wav, flac, ogg, mp3, m4a, ...), at any rate and channel count.
 * `options` may be NULL (defaults). */
PARLEY_API parley_status parley_diarize_file(parley_diarizer* diarizer, const char* path,
                                             const parley_run_options* options,
                                             parley_result** result);
/* The sample rates parley takes, in Hz, for samples as for files. */
#define PARLEY_MIN_SAMPLE_RATE 1000
#define PARLEY_MAX_SAMPLE_RATE 768000

/* Mono samples in [-1, 1] at `sample_rate` Hz, PARLEY_MIN_SAMPLE_RATE to PARLEY_MAX_SAMPLE_RATE
 * as for files (resampled to 16 kHz when it differs). */
PARLEY_API parley_status parley_diarize_samples(parley_diarizer* diarizer, const float* samples,
                                                size_t sample_count, int sample_rate,
                                                const parley_run_options* options,
                                                parley_result** result);

/* ---- Results (all getters accept NULL and out-of-range indices, returning 0 / empty) ------- */

typedef struct parley_turn {
  double start; /* seconds */
  double end;   /* seconds */
  int speaker;  /* 0, 1, ...: SPEAKER_00, SPEAKER_01, ...; the row of the speaker's embedding */
} parley_turn;

PARLEY_API const char* parley_result_uri(const parley_result* result);
PARLEY_API double parley_result_duration(const parley_result* result); /* seconds of audio */
PARLEY_API size_t parley_result_speaker_count(const parley_result* result);
/* exclusive != 0: the turns with at most one speaker at a time (for transcripts). */
PARLEY_API size_t parley_result_turn_count(const parley_result* result, int exclusive);
PARLEY_API parley_turn parley_result_turn(const parley_result* result, size_t index, int exclusive);
/* One centroid embedding per speaker: `dimension` floats each (256 for ResNet34-LM); zeros for
 * a speaker the count added beyond the clusters. NULL when `speaker` is out of range. */
PARLEY_API size_t parley_result_embedding_dimension(const parley_result* result);
PARLEY_API const float* parley_result_embedding(const parley_result* result, size_t speaker);
/* Seconds spent per stage ("decode", "segmentation", "embedding", "clustering", ...). */
PARLEY_API size_t parley_result_stage_count(const parley_result* result);
PARLEY_API const char* parley_result_stage_name(const parley_result* result, size_t index);
PARLEY_API double parley_result_stage_seconds(const parley_result* result, size_t index);
/* Things the user should know about the result (for example a speed twin in use). */
PARLEY_API size_t parley_result_warning_count(const parley_result* result);
PARLEY_API const char* parley_result_warning(const parley_result* result, size_t index);
/* 1 when the speed twin made the embeddings (speaker labels are meaningless), else 0. */
PARLEY_API int parley_result_speed_twin(const parley_result* result);
/* The result in `format`, byte for byte what `parley diarize --format FORMAT` writes (one writer
 * serves every face): "rttm", "json" ({"diarization", "exclusive_diarization",
 * "speaker_embeddings"}, pyannote's), "txt" ("start end speaker" lines), "srt" or "vtt" (a
 * subtitle cue per turn naming the speaker). exclusive != 0: the turns with at most one speaker
 * at a time (json holds both kinds). `uri` names the recording in rttm (NULL: the result's own;
 * no whitespace or control characters, which RTTM cannot hold). The text is the caller's: free
 * it with parley_free. NULL (parley_last_error says why) on a NULL result or a wrong argument. */
PARLEY_API char* parley_result_format(const parley_result* result, const char* format,
                                      int exclusive, const char* uri);
/* parley_result_format(result, "rttm", 0, uri), owned by the result (valid until its free) when
 * `uri` is NULL or the result's own; for another uri owned by this thread, valid until the next
 * parley_result_rttm call on it. */
PARLEY_API const char* parley_result_rttm(const parley_result* result, const char* uri);
/* parley_result_format(result, "json", 0, NULL), owned by the result (valid until its free). */
PARLEY_API const char* parley_result_json(const parley_result* result);
PARLEY_API void parley_result_free(parley_result* result);

/* ---- Many recordings: the corpus engine ---------------------------------------------------
 * Recordings are decoded, run through the networks and clustered in parallel stages; each
 * result comes out as soon as it is done (completion order, not submission order). A result
 * equals diarizing that recording alone. */

typedef struct parley_batch parley_batch;

PARLEY_API parley_status parley_batch_new(const parley_params* params, parley_batch** batch);
/* parley_batch_new from named options (parley_options): their devices, engines and jobs lay the
 * engine out as `parley diarize --devices --engines --jobs` does (parley_batch_new takes the
 * defaults of those); their exclusive is the batch's parley_batch_set_exclusive. */
PARLEY_API parley_status parley_batch_new_from(const parley_options* options, parley_batch** batch);
/* Queue a recording; `index` (may be NULL) receives its number (0, 1, ... in submission order).
 * Only the speaker counts of `options` apply; NULL: defaults. */
PARLEY_API parley_status parley_batch_submit_file(parley_batch* batch, const char* path,
                                                  const parley_run_options* options, size_t* index);
PARLEY_API parley_status parley_batch_submit_samples(parley_batch* batch, const float* samples,
                                                     size_t sample_count, int sample_rate,
                                                     const parley_run_options* options,
                                                     size_t* index);
/* No more submissions: once the queued recordings are done, next_result returns PARLEY_DONE. */
PARLEY_API void parley_batch_finish(parley_batch* batch);
/* Waits for the next finished recording. PARLEY_OK: `result` is set (free it). PARLEY_DONE: the
 * batch is finished and every result was handed out. PARLEY_ERROR_FAILED (or another failure
 * status): that recording failed (parley_last_error says why) and `result` is NULL; the batch
 * goes on. `index` (may be NULL) says which recording it was. When every submitted recording
 * was handed out and the batch is not finished, it returns PARLEY_ERROR_INVALID_ARGUMENT at once
 * rather than wait for a submission that may never come. */
PARLEY_API parley_status parley_batch_next_result(parley_batch* batch, size_t* index,
                                                  parley_result** result);
/* Waits at most `timeout_seconds` (at most a day) until parley_batch_next_result would return
 * without waiting: 1 then, 0 when the time ran out. For callers that must stay responsive (to a
 * signal, a user's cancel) while a batch works. */
PARLEY_API int parley_batch_wait(parley_batch* batch, double timeout_seconds);
/* Stops the batch (unfinished recordings are dropped) and frees it. */
PARLEY_API void parley_batch_free(parley_batch* batch);

/* How the batch's corpus engine is laid out, as JSON: providers, devices, engines per device,
 * engines, the stages' threads and an engine's execution settings. The same settings give the
 * same layout as `parley diarize --print-layout`. Owned by the batch. */
PARLEY_API const char* parley_batch_layout(const parley_batch* batch);

/* ---- Resumable runs into a folder (docs/corpus.md, "Reruns") -----------------------------
 * As `parley diarize --out-dir` and parley.distributed write them, so that a run of any of them
 * skips what another finished: a recording's output is <out_dir>/<name>.<format> and its record
 * <out_dir>/.parley/<name>.<format>.json, each written atomically as soon as it is done. A
 * recording whose record says it was finished with the same settings (those that change the
 * output, the model files' sha256, the format, the audio file's path, size and time) is skipped.
 * `format`: "rttm", "json", "txt", "srt" or "vtt" (parley_result_format's). `name`: the
 * output's name (at most 160 bytes, no '/'); NULL: the name `parley diarize` gives the file when
 * no other recording of its list shares it (its name without the extension; a longer one cut and
 * given hex digits). A batch refuses (PARLEY_ERROR_INVALID_ARGUMENT) a recording whose output
 * another recording of the batch writes already: pass distinct names (parley_output_names tells
 * a list's recordings apart as the CLI does). */

/* Queues `path` as parley_batch_submit_file does, to be written into `out_dir` (made when
 * missing). parley_batch_next_result then answers PARLEY_SKIPPED (and no result) for a recording
 * finished earlier, PARLEY_OK with the result once it is written, or a failure status when it
 * could not be diarized or written. */
PARLEY_API parley_status parley_batch_submit_to(parley_batch* batch, const char* path,
                                                const char* out_dir, const char* format,
                                                const char* name, const parley_run_options* options,
                                                size_t* index);
/* The turns the recordings submitted to a folder after this call are written with: exclusive != 0
 * the turns with at most one speaker at a time in rttm, txt, srt and vtt (json holds both), as
 * `parley diarize --out-dir DIR --exclusive` writes them; 0 (the default) the turns as they
 * overlap. A record made with the other choice is not taken for finished. */
PARLEY_API parley_status parley_batch_set_exclusive(parley_batch* batch, int exclusive);
/* The batch's recordings so far: diarized (and written, with parley_batch_submit_to), skipped as
 * finished earlier, failed. Any pointer may be NULL. */
PARLEY_API void parley_batch_counts(const parley_batch* batch, size_t* done, size_t* skipped,
                                    size_t* failed);
/* Whether `path` was finished into `out_dir` with these settings (1) or not (0), without
 * loading the models: what a scheduler checks before it hands out work. */
PARLEY_API parley_status parley_run_finished(const parley_params* params,
                                             const parley_run_options* options, const char* path,
                                             const char* out_dir, const char* format,
                                             const char* name, int* finished);
/* parley_run_finished from named options (parley_options): the same answer for the same
 * settings. Their "exclusive" counts too: set, the record asked for is the exclusive turns' (as
 * parley_batch_set_exclusive writes them); parley_run_finished asks for the overlapping turns. */
PARLEY_API parley_status parley_run_finished_from(const parley_options* options,
                                                  const parley_run_options* run, const char* path,
                                                  const char* out_dir, const char* format,
                                                  const char* name, int* finished);
/* One output name per path, each followed by a newline (names never hold one), as
 * `parley diarize --out-dir` names them: the file's name without its extension, and where that
 * would not tell recordings apart, '-' and hex digits of the absolute path's sha256. Each file
 * must be listed once. NULL on failure (parley_last_error says why). Valid until the next call
 * of this function or parley_manifest_paths on this thread. */
PARLEY_API const char* parley_output_names(const char* const* paths, size_t count);
/* The recordings a manifest lists, each followed by a newline, as `parley diarize --manifest`
 * reads it (one path per line or parley eval's TSV; '#' comments; relative paths from the
 * manifest's folder). NULL on failure. Valid as parley_output_names' text. */
PARLEY_API const char* parley_manifest_paths(const char* manifest);
/* The plan of a run of `paths` into `out_dir` with `options` (their speaker counts and exclusive
 * too), as `parley diarize --out-dir` plans its list, without loading the models: what a
 * scheduler hands out. Each file once (a repeat, the same absolute path however written, is left
 * out), named over the whole list as parley_output_names names it, and for each of the `formats`
 * ("rttm", "json", "txt", "srt", "vtt"; at least one, each once) its output, its record and
 * whether an earlier run finished it with these settings. As JSON:
 *   {"recordings": [{"index", "audio", "name", "finished", "audio_seconds",
 *                    "outputs": [{"format", "output", "record", "finished"}]}],
 *    "repeats": [{"index", "first"}]}
 * "index" and "first" are positions in `paths`; "finished" is set when every format is, and
 * "audio_seconds" is then what the record says (else 0). Texts keep the file names' bytes: a
 * byte that is not UTF-8 is written as the escaped lone surrogate U+DC00 + the byte (Python's
 * surrogateescape: json.loads, then os.fsencode, gives the bytes back). Pass a recording's
 * "name" to parley_batch_submit_to. `out_dir` NULL: the names and repeats only ("outputs" empty,
 * nothing finished; `options` and `formats` are not read and may be NULL). The text is the
 * caller's: free it with parley_free. NULL on failure (parley_last_error says why). */
PARLEY_API char* parley_corpus_plan_json(const parley_options* options, const char* const* paths,
                                         size_t count, const char* out_dir,
                                         const char* const* formats, size_t format_count);
/* For a recording `index` that parley_batch_next_result answered PARLEY_SKIPPED: the seconds of
 * audio its record says. 0 for any other. */
PARLEY_API double parley_batch_skipped_seconds(const parley_batch* batch, size_t index);

/* ---- Scoring ------------------------------------------------------------------------------ */

typedef struct parley_der {
  double der;         /* (missed + false_alarm + confusion) / total */
  double missed;      /* seconds */
  double false_alarm; /* seconds */
  double confusion;   /* seconds */
  double total;       /* seconds of scored reference speech */
} parley_der;

/* Diarization error rate of RTTM text `hypothesis` against RTTM text `reference`, over every
 * file of the reference (md-eval's definition). `collar`: seconds unscored on each side of every
 * reference boundary (finite, at least 0); skip_overlap != 0: overlapped reference speech is not
 * scored. */
PARLEY_API parley_status parley_score_rttm(const char* reference, const char* hypothesis,
                                           double collar, int skip_overlap, parley_der* der);

/* ---- Who is speaking, by name (docs/identity.md) ---------------------------------------------
 * A speaker library: named voiceprints (speaker centroids) in one SQLite file, each recording the
 * sha256 of the embedding model that made it; several threads and processes may open one file.
 * Identification names the speakers of a result whose centroid scores (cosine) at least
 * `threshold` with a name's best voiceprint, one name per speaker and one speaker per name,
 * chosen by optimal matching; the others keep SPEAKER_xx. Functions taking a diarizer use its
 * embedding model: a library holding another model's voiceprints is refused. */

#define PARLEY_DEFAULT_IDENTIFY_THRESHOLD 0.5

typedef struct parley_library parley_library;

/* Opens (creating when missing) the library at `path`. One thread at a time per handle; open a
 * handle per thread for more. */
PARLEY_API parley_status parley_library_open(const char* path, parley_library** library);
PARLEY_API void parley_library_free(parley_library* library);
/* Adds the centroid of speaker `speaker` of `result` (made by `diarizer`) as a voiceprint of
 * `name` (one word of UTF-8: no white space). `id` (may be NULL) receives its id. For a voiceprint
 * from a clip of one speaker, diarize it with num_speakers = 1 and add speaker 0. */
PARLEY_API parley_status parley_library_add(parley_library* library, const char* name,
                                            const parley_diarizer* diarizer,
                                            const parley_result* result, size_t speaker,
                                            long long* id);
/* [{"id", "name", "source", "created", "model_sha256", "embedding_mode", "dimension"}...] as
 * JSON, owned by the library until the next call on it; NULL on failure (parley_last_error). */
PARLEY_API const char* parley_library_list_json(parley_library* library);
/* Removes every voiceprint of `name`; `removed` (may be NULL) receives how many. */
PARLEY_API parley_status parley_library_remove(parley_library* library, const char* name,
                                               size_t* removed);
/* Renames every voiceprint of `from` to `to` (a name as parley_library_add takes); `renamed` (may
 * be NULL) receives how many (0: no such name). When `to` already names voiceprints it fails
 * (PARLEY_ERROR_INVALID_ARGUMENT) unless `merge` != 0, which joins the two names' voiceprints. */
PARLEY_API parley_status parley_library_rename(parley_library* library, const char* from,
                                               const char* to, int merge, size_t* renamed);
/* The whole library as JSON, embeddings included ({"format": "parley-speaker-library",
 * "version": 1, "voiceprints": [{"name", "source", "created", "model_sha256", "embedding_mode",
 * "embedding"}...]}, what `parley voiceprint export` writes); owned by the library until the next
 * call on it; NULL on failure (parley_last_error). */
PARLEY_API const char* parley_library_export_json(parley_library* library);
/* Adds every voiceprint of such a document, all or none; `imported` (may be NULL) receives how
 * many. With a `diarizer`, a voiceprint of another embedding model than its own refuses the whole
 * document; NULL: no model check (the library may then hold voiceprints that parley_identify
 * refuses with another model). */
PARLEY_API parley_status parley_library_import_json(parley_library* library, const char* document,
                                                    const parley_diarizer* diarizer,
                                                    size_t* imported);

typedef struct parley_identification parley_identification;
typedef struct parley_named_speaker {
  int speaker;       /* the result's speaker index (SPEAKER_xx) */
  const char* name;  /* owned by the identification */
  double score;      /* cosine, threshold to 1 */
  double confidence; /* 0 to 1: the margin over the best rival decision */
} parley_named_speaker;

/* Scores the speakers of `result` (made by `diarizer`) against `library`. */
PARLEY_API parley_status parley_identify(parley_library* library, const parley_diarizer* diarizer,
                                         const parley_result* result, double threshold,
                                         parley_identification** identification);
PARLEY_API size_t parley_identification_count(const parley_identification* identification);
/* The index-th named speaker (by speaker index); speaker -1 and name "" when out of range. */
PARLEY_API parley_named_speaker
parley_identification_speaker(const parley_identification* identification, size_t index);
/* The result as parley_result_json writes it, with the names as labels and an "identification"
 * object (threshold, speakers with label, name, score, confidence); owned by the identification. */
PARLEY_API const char* parley_identification_json(const parley_identification* identification);
/* The named result as parley_result_format writes it, with the names as labels and each named
 * speaker's scores: rttm's column 9 holds its confidence (3 decimals; <NA> for the others), txt,
 * srt and vtt label it "Alice (0.81)" (the cosine score, 2 decimals) and json is
 * parley_identification_json's document. The text is the caller's: free it with parley_free.
 * NULL (parley_last_error says why) on a NULL identification or a wrong argument. */
PARLEY_API char* parley_identification_format(const parley_identification* identification,
                                              const char* format, int exclusive, const char* uri);
PARLEY_API void parley_identification_free(parley_identification* identification);

/* ---- Live diarization: a stream (docs/live.md) --------------------------------------------
 * Audio pushed in chunks of any size; speaker-turn events come out within `latency` seconds of
 * the audio they are about, and a final label never changes. A stream runs on a diarizer's
 * models: any number of streams may share one diarizer, from any threads (their model calls
 * take turns); do not call parley_diarize_* on that diarizer while its streams run. */

typedef struct parley_stream_params {
  double sample_rate;     /* Hz of the pushed samples (1000 to 768000; resampled to 16 kHz) */
  double step;            /* seconds the 10 s window moves between model runs (0.1-5; 0.5) */
  double latency;         /* seconds after which a frame's speaker is final (0.5-5, >= step; 2) */
  int max_speakers;       /* most speakers the stream creates (1 to 1000; 20) */
  double match_threshold; /* cosine distance under which a voice matches a speaker (0-2; 0.7) */
  int provisional;        /* nonzero: also PARLEY_STREAM_TURN_UPDATE events for frames not final */
  /* nonzero: parley_stream_finish diarizes the whole stream as parley_diarize_samples does (the
   * audio waits in a temporary file) and returns that under the live speaker numbers. */
  int final_recluster;
} parley_stream_params;

PARLEY_API parley_stream_params parley_default_stream_params(void);
/* The most interleaved channels parley_stream_push and parley_stream_push_s16 take (at least 1),
 * as every face of a stream (`parley stream --channels`, the WebSocket's channels). */
#define PARLEY_MAX_STREAM_CHANNELS 64

typedef enum parley_stream_event_kind {
  PARLEY_STREAM_TURN_START = 0,  /* `speaker` began speaking at `start` (final) */
  PARLEY_STREAM_TURN_UPDATE = 1, /* provisional: `speaker` seems active from start to end */
  PARLEY_STREAM_TURN_END = 2     /* `speaker`'s turn [start, end] is over (final) */
} parley_stream_event_kind;

typedef struct parley_stream_event {
  parley_stream_event_kind kind;
  int speaker;       /* 0, 1, ...: SPEAKER_00, SPEAKER_01, ..., the same for the whole stream;
                      * -1 in an update of a voice not named yet (named at its first turn start) */
  double start;      /* seconds from the stream's first sample */
  double end;        /* seconds (equal to start for PARLEY_STREAM_TURN_START) */
  double audio_time; /* seconds of audio processed when the event was made */
  double latency;    /* wall seconds from the audio's arrival to the event */
} parley_stream_event;

/* Called for each event as it is made, on the thread of parley_stream_push/finish. */
typedef void (*parley_stream_callback)(const parley_stream_event* event, void* user_data);

typedef struct parley_stream parley_stream;

/* A stream on `diarizer`'s models (which must outlive it); `params` NULL: defaults. */
PARLEY_API parley_status parley_stream_new(parley_diarizer* diarizer,
                                           const parley_stream_params* params,
                                           parley_stream** stream);
/* `frame_count` frames of `channels` interleaved float samples in [-1, 1] (mono: channels 1).
 * Runs the models for every whole step now available. */
PARLEY_API parley_status parley_stream_push(parley_stream* stream, const float* samples,
                                            size_t frame_count, int channels);
/* The same for signed 16-bit samples. */
PARLEY_API parley_status parley_stream_push_s16(parley_stream* stream, const int16_t* samples,
                                                size_t frame_count, int channels);
/* Copies up to `capacity` waiting events, oldest first, into `events` and removes them;
 * `count` receives how many. Events wait only while no callback is set, and every one waits
 * until it is polled: a stream that is pushed to but never polled holds all its events (its
 * memory grows with the audio). Poll after each push (until `count` < `capacity`), or set a
 * callback. */
PARLEY_API parley_status parley_stream_poll(parley_stream* stream, parley_stream_event* events,
                                            size_t capacity, size_t* count);
/* Hands events to `callback` as they are made (NULL: back to parley_stream_poll). */
PARLEY_API parley_status parley_stream_set_callback(parley_stream* stream,
                                                    parley_stream_callback callback,
                                                    void* user_data);
/* Ends the stream: the last frames become final (their events are made, to the callback or for
 * parley_stream_poll) and `result` receives the whole diarization (free it with
 * parley_result_free). No push after it. */
PARLEY_API parley_status parley_stream_finish(parley_stream* stream, parley_result** result);
PARLEY_API void parley_stream_free(parley_stream* stream);

/* Writes `size` bytes at `bytes` to `path` as parley writes its outputs: whole or not at all (a
 * temporary file in the same folder, flushed, renamed over `path`; a failure leaves the old file
 * as it was), a read-only file refused, a link followed, a device or pipe written in place. For a
 * binding that writes a result's text (parley_result_format) to a file of its caller's. */
PARLEY_API parley_status parley_write_file(const char* path, const char* bytes, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PARLEY_PARLEY_H */
