# Run by `cmake --install` (cmake/ParleyInstall.cmake sets PARLEY_MODELS_SOURCE, the build tree's
# models folder, and PARLEY_MODELS_DESTINATION, relative to the prefix): copies the model files
# there, the ONNX files and the PLDA folder, as files: build/models links to ../shared, which an
# install must not depend on. Nothing to copy (models not prepared) is not an error: the installed
# parley then says where it looked and how to fetch them.
if(NOT IS_DIRECTORY "${PARLEY_MODELS_SOURCE}")
  message(STATUS "No models to install: ${PARLEY_MODELS_SOURCE} does not exist "
                 "(scripts/prepare-models fills it)")
  return()
endif()
set(destination "${CMAKE_INSTALL_PREFIX}/${PARLEY_MODELS_DESTINATION}")
file(GLOB names RELATIVE "${PARLEY_MODELS_SOURCE}" "${PARLEY_MODELS_SOURCE}/*.onnx"
     "${PARLEY_MODELS_SOURCE}/plda/*.npz")
list(SORT names)
foreach(name IN LISTS names)
  file(REAL_PATH "${PARLEY_MODELS_SOURCE}/${name}" source)
  get_filename_component(folder "${name}" DIRECTORY)
  get_filename_component(file_name "${name}" NAME)
  file(INSTALL DESTINATION "${destination}/${folder}" TYPE FILE RENAME "${file_name}"
       FILES "${source}")
endforeach()
