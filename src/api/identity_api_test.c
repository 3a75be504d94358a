/* The C API's speaker library and identification with the speed twin:
 * identity_api_test MODELS_DIR AUDIO WORK_FILE. Plain C, so that the header is proven to be C.
 * The same audio diarized twice gives the same centroids, so a speaker added from the first
 * result is named, with score 1, in the second. */
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
  parley_identification_free(identification);

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
