// swift-tools-version:6.0
// The Swift binding of cursor_sdk (the Cursor agent SDK as a C library).
//
// The C library is found through pkg-config (`cursor_sdk.pc`, written by `make install`), or,
// for the build tree, through flags: `swift build -Xcc -I<repo>/include -Xlinker -L<libdir>`.
import PackageDescription

let package = Package(
    name: "CursorSDK",
    // Synchronization.Mutex needs macOS 15 (on Linux it is always there).
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CursorSDK", targets: ["CursorSDK"]),
    ],
    targets: [
        // include/cursor_sdk.h and libcursor_sdk, as the system provides them.
        .systemLibrary(name: "CCursorSDK", pkgConfig: "cursor_sdk"),
        .target(
            name: "CursorSDK",
            dependencies: ["CCursorSDK"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(name: "CursorSDKTests", dependencies: ["CursorSDK", "CCursorSDK"]),
    ],
    swiftLanguageModes: [.v6]
)
