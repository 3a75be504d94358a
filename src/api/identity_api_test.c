/* The C API's speaker library and identification with the speed twin:
 * identity_api_test MODELS_DIR AUDIO WORK_FILE. Plain C, so that the header is proven to be C.
 * The same audio diarized twice gives the same centroids, so a speaker added from the first
 * result is named, with score 1, in the second. A second library file (LIBRARY_FILE.copy) takes
 * the first one's export. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <parley/parley.h>

#include "c_api_test_support.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: identity_api_test MODELS_DIR AUDIO LIBRARY_FILE\n");
    return 2;
  }
  remove(argv[3]);
  parley_params params = parley_default_params();
  params.models_dir = argv[1];
  params.step_seconds = 2.0;
  parley_diarizer* diarizer = NULL;
  CHECK(parley_diarizer_new(&params, &diarizer) == PARLEY_OK);
  parley_result* first = NULL;
  parley_result* second = NULL;
  CHECK(parley_diarize_file(diarizer, argv[2], NULL, &first) == PARLEY_OK);
  CHECK(parley_diarize_file(diarizer, argv[2], NULL, &second) == PARLEY_OK);

  parley_library* library = NULL;
  CHECK(parley_library_open(NULL, &library) == PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_library_open(argv[3], &library) == PARLEY_OK);
  long long id = 0;
  CHECK(parley_library_add(library, "Bob", diarizer, first, 0, &id) == PARLEY_OK);
  CHECK(id > 0);
  CHECK(parley_library_add(library, "Two words", diarizer, first, 0, NULL) != PARLEY_OK);
  CHECK(strstr(parley_last_error(), "one word") != NULL);
  CHECK(parley_library_add(library, "Bob", diarizer, first, 1000, NULL) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  const char* list = parley_library_list_json(library);
  CHECK(list != NULL && strstr(list, "\"name\":\"Bob\"") != NULL);

  parley_identification* identification = NULL;
  CHECK(parley_identify(library, diarizer, second, NAN, &identification) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_identify(library, diarizer, second, PARLEY_DEFAULT_IDENTIFY_THRESHOLD,
                        &identification) == PARLEY_OK);
  CHECK(parley_identification_count(identification) == 1);
  const parley_named_speaker named = parley_identification_speaker(identification, 0);
  CHECK(named.speaker == 0);
  CHECK(strcmp(named.name, "Bob") == 0);
  CHECK(fabs(named.score - 1.0) < 1e-6);
  CHECK(named.confidence >= 0.0 && named.confidence <= 1.0);
  CHECK(parley_identification_speaker(identification, 1).speaker == -1);
  const char* json = parley_identification_json(identification);
  CHECK(json != NULL && strstr(json, "\"identification\"") != NULL &&
        strstr(json, "\"speaker\": \"Bob\"") != NULL);
  /* Every format with the name and its scores: confidence in RTTM's column 9, the score in
   * subtitles. */
  char* rttm = parley_identification_format(identification, "rttm", 0, "call");
  char expected[64];
  snprintf(expected, sizeof expected, "<NA> <NA> Bob %.3f <NA>\n", named.confidence);
  CHECK(rttm != NULL && strncmp(rttm, "SPEAKER call 1 ", 15) == 0 &&
        strstr(rttm, expected) != NULL);
  parley_free(rttm);
  char* srt = parley_identification_format(identification, "srt", 1, NULL);
  CHECK(srt != NULL && strstr(srt, "\nBob (1.00)\n") != NULL);
  parley_free(srt);
  char* named_json = parley_identification_format(identification, "json", 0, NULL);
  CHECK(named_json != NULL && strcmp(named_json, json) == 0);
  parley_free(named_json);
  CHECK(parley_identification_format(identification, "docx", 0, NULL) == NULL);
  CHECK(strstr(parley_last_error(), "parley_identification_format") != NULL);
  CHECK(parley_identification_format(NULL, "rttm", 0, NULL) == NULL);
  parley_identification_free(identification);

  /* Rename, refused onto a name in use unless merged. */
  size_t renamed = 0;
  CHECK(parley_library_add(library, "Carol", diarizer, first, 0, NULL) == PARLEY_OK);
  CHECK(parley_library_rename(library, "Carol", "Bob", 0, &renamed) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "merge") != NULL);
  CHECK(parley_library_rename(library, "Carol", "Bob", 1, &renamed) == PARLEY_OK && renamed == 1);
  CHECK(parley_library_rename(library, "Bob", "Dave", 0, &renamed) == PARLEY_OK && renamed == 2);
  CHECK(parley_library_rename(library, "Nobody", "Erin", 0, &renamed) == PARLEY_OK && renamed == 0);
  CHECK(parley_library_remove(library, "Dave", &renamed) == PARLEY_OK && renamed == 2);
  CHECK(parley_library_add(library, "Bob", diarizer, first, 0, NULL) == PARLEY_OK);

  /* Export into another file and back: the same voiceprint names the same speaker. */
  const char* exported = parley_library_export_json(library);
  CHECK(exported != NULL && strstr(exported, "\"parley-speaker-library\"") != NULL);
  char copy_path[4096];
  snprintf(copy_path, sizeof copy_path, "%s.copy", argv[3]);
  remove(copy_path);
  parley_library* copy = NULL;
  CHECK(parley_library_open(copy_path, &copy) == PARLEY_OK);
  size_t imported = 0;
  CHECK(parley_library_import_json(copy, exported, diarizer, &imported) == PARLEY_OK &&
        imported == 1);
  CHECK(parley_library_import_json(copy, "{\"format\": \"other\"}", NULL, NULL) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(parley_identify(copy, diarizer, second, 0.5, &identification) == PARLEY_OK);
  CHECK(parley_identification_count(identification) == 1 &&
        strcmp(parley_identification_speaker(identification, 0).name, "Bob") == 0);
  parley_identification_free(identification);
  parley_library_free(copy);

  /* A voiceprint of another embedding model: refused on import with a diarizer; taken without
   * one, and then identification with this model refuses the library. */
  char foreign[1 << 16];
  CHECK(strlen(exported) < sizeof foreign);
  strcpy(foreign, exported);
  char* digest = strstr(foreign, "\"model_sha256\": \"");
  CHECK(digest != NULL);
  if (digest != NULL) {
    char* hex = digest + strlen("\"model_sha256\": \"");
    *hex = *hex == '0' ? '1' : '0';
  }
  remove(copy_path);
  CHECK(parley_library_open(copy_path, &copy) == PARLEY_OK);
  CHECK(parley_library_import_json(copy, foreign, diarizer, &imported) ==
        PARLEY_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(parley_last_error(), "another embedding model") != NULL);
  CHECK(parley_library_import_json(copy, foreign, NULL, &imported) == PARLEY_OK && imported == 1);
  CHECK(parley_identify(copy, diarizer, second, 0.5, &identification) != PARLEY_OK);
  CHECK(strstr(parley_last_error(), "another embedding model") != NULL);
  parley_library_free(copy);
  remove(copy_path);

  size_t removed = 0;
  CHECK(parley_library_remove(library, "Bob", &removed) == PARLEY_OK && removed == 1);
  CHECK(parley_identify(library, diarizer, second, 0.5, &identification) == PARLEY_OK);
  CHECK(parley_identification_count(identification) == 0);
  parley_identification_free(identification);

  parley_library_free(library);
  parley_result_free(first);
  parley_result_free(second);
  parley_diarizer_free(diarizer);
  if (failures == 0) printf("identity_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
