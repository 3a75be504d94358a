/* The C API in a page: diarize one recording and print who spoke when.
 *   diarize AUDIO [MODELS_DIR]
 * Without MODELS_DIR the models are found as the parley command finds them ($PARLEY_MODELS, then
 * the per-user cache that `parley models fetch` fills, then the installed share/parley/models or
 * the build tree's build/models: docs/models.md). */
#include <stdio.h>

#include <parley/parley.h>

static int show_progress(double fraction, const char* stage, void* user_data) {
  (void)user_data;
  fprintf(stderr, "\r%-24s %3.0f%%", stage, 100.0 * fraction);
  if (fraction >= 1.0) fprintf(stderr, "\n");
  return 0; /* nonzero would stop the run */
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s AUDIO [MODELS_DIR]\n", argv[0]);
    return 2;
  }
  parley_params params = parley_default_params();
  if (argc == 3) params.models_dir = argv[2];
  parley_diarizer* diarizer = NULL;
  if (parley_diarizer_new(&params, &diarizer) != PARLEY_OK) {
    fprintf(stderr, "parley: %s\n", parley_last_error());
    return 1;
  }
  parley_run_options options = parley_default_run_options();
  options.progress = show_progress;
  parley_result* result = NULL;
  if (parley_diarize_file(diarizer, argv[1], &options, &result) != PARLEY_OK) {
    fprintf(stderr, "parley: %s\n", parley_last_error());
    parley_diarizer_free(diarizer);
    return 1;
  }
  for (size_t i = 0; i < parley_result_warning_count(result); ++i) {
    fprintf(stderr, "%s\n", parley_result_warning(result, i));
  }
  const size_t turns = parley_result_turn_count(result, 0);
  const size_t speakers = parley_result_speaker_count(result);
  printf("parley %s: %zu speaker%s, %zu turn%s, %zu-dimensional speaker embeddings\n",
         parley_version(), speakers, speakers == 1 ? "" : "s", turns, turns == 1 ? "" : "s",
         parley_result_embedding_dimension(result));
  for (size_t i = 0; i < turns; ++i) {
    const parley_turn turn = parley_result_turn(result, i, 0);
    printf("%8.3f %8.3f SPEAKER_%02d\n", turn.start, turn.end, turn.speaker);
  }
  parley_result_free(result);
  parley_diarizer_free(diarizer);
  return turns > 0 ? 0 : 1;
}
