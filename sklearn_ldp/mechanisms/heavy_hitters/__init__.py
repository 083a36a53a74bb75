"""Heavy hitters over domains too large to list: prefix trees and sketches."""
