// Tests only: writes the tiny speaker-embedding model of embedding_model_test_support.h to a file,
// so that CLI tests can run the whole pipeline in seconds (labels are meaningless, as with the
// speed twin).
//   write_test_embedding_model OUT.onnx
#include <cstdio>
#include <fstream>

#include "graph/embedding_model_test_support.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_test_embedding_model OUT.onnx\n");
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << parley::graph::testing::make_test_embedding_model();
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
