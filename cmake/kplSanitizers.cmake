# Instrument kpl's own code (not the prebuilt Kokkos) with the sanitizers named
# in KPL_SANITIZERS, e.g. "address;undefined". AddressSanitizer and
# UndefinedBehaviorSanitizer need no instrumented dependencies.
if(KPL_SANITIZERS)
  list(JOIN KPL_SANITIZERS "," kpl_sanitizer_list)
  set(KPL_SANITIZER_FLAGS -fsanitize=${kpl_sanitizer_list} -fno-omit-frame-pointer
                          -fno-sanitize-recover=all)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${KPL_SANITIZER_FLAGS}>")
  add_link_options(${KPL_SANITIZER_FLAGS})
endif()
