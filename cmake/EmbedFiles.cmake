# ovfix_embed_files(OUTPUT file.cc FUNCTION name [ROOT dir] FILES a b ...)
# Generates a .cc defining
#   const std::vector<std::pair<std::string_view, std::string_view>>& name();
# (namespace ovfix) with each file's name (relative to ROOT, or its base name without ROOT)
# and contents, so the binary needs no source tree at run time. Regenerated when any file
# changes; files are listed sorted by name.
function(ovfix_embed_files)
  cmake_parse_arguments(ARG "" "OUTPUT;FUNCTION;ROOT" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} -DFUNCTION=${ARG_FUNCTION}
            -DROOT=${ARG_ROOT} "-DFILES=${ARG_FILES}"
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    COMMENT "Embedding ${ARG_FUNCTION} files"
    VERBATIM)
endfunction()
