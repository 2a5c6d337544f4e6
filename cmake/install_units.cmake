# Installs packaging/*.service with the paths of this install, at install time (so
# `cmake --install --prefix P` and DESTDIR both hold): the units in the tree say
# /usr/local/bin and /usr/local/share/doc, which is where a default `make install`
# puts the binaries and docs. Set by the install(CODE) of CMakeLists.txt:
# BC_UNIT_SRCS (the units), BC_UNIT_DIR, BC_BINDIR, BC_DOCDIR (each absolute or
# relative to CMAKE_INSTALL_PREFIX) and BC_UNIT_TMP (a directory of the build).
foreach(v BC_UNIT_DIR BC_BINDIR BC_DOCDIR)
  if(IS_ABSOLUTE "${${v}}")
    set(${v}_ABS "${${v}}")
  else()
    set(${v}_ABS "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
file(MAKE_DIRECTORY "${BC_UNIT_TMP}")
set(out)
foreach(src ${BC_UNIT_SRCS})
  get_filename_component(name "${src}" NAME)
  file(READ "${src}" text)
  string(REPLACE "=/usr/local/bin/" "=${BC_BINDIR_ABS}/" text "${text}")
  string(REPLACE "file:///usr/local/share/doc/" "file://${BC_DOCDIR_ABS}/" text "${text}")
  file(WRITE "${BC_UNIT_TMP}/${name}" "${text}")
  list(APPEND out "${BC_UNIT_TMP}/${name}")
endforeach()
# file(INSTALL) puts DESTDIR in front itself, as the generated install rules do
file(INSTALL DESTINATION "${BC_UNIT_DIR_ABS}" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES ${out})
